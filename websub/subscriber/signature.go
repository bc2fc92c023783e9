package subscriber

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
)

// Signature errors, matched with errors.Is.
var (
	ErrNoSignature  = errors.New("subscriber: X-Hub-Signature missing")
	ErrBadSignature = errors.New("subscriber: X-Hub-Signature invalid")
)

// hashes are the algorithms a hub may name (WS-HUB-25).
var hashes = map[string]func() hash.Hash{
	"sha1":   sha1.New,
	"sha256": sha256.New,
	"sha384": sha512.New384,
	"sha512": sha512.New,
}

// CheckSignature checks an X-Hub-Signature header value ("<alg>=<hex>")
// against the HMAC of body keyed with secret, in constant time, with the
// algorithm the header names (WS-SUB-10). Hex digits may be of either case.
func CheckSignature(secret []byte, header string, body []byte) error {
	header = strings.TrimSpace(header)
	if header == "" {
		return ErrNoSignature
	}
	alg, sig, ok := strings.Cut(header, "=")
	if !ok {
		return fmt.Errorf("%w: no algorithm", ErrBadSignature)
	}
	newHash, ok := hashes[strings.ToLower(strings.TrimSpace(alg))]
	if !ok {
		return fmt.Errorf("%w: unknown algorithm %.16q", ErrBadSignature, alg)
	}
	got, err := hex.DecodeString(strings.TrimSpace(sig))
	if err != nil {
		return fmt.Errorf("%w: not hex", ErrBadSignature)
	}
	m := hmac.New(newHash, secret)
	m.Write(body)
	if !hmac.Equal(got, m.Sum(nil)) {
		return fmt.Errorf("%w: digest mismatch", ErrBadSignature)
	}
	return nil
}

// Sign returns the X-Hub-Signature value for body with algorithm alg
// (sha1, sha256, sha384 or sha512), lowercase hex. For hubs and tests.
func Sign(alg string, secret, body []byte) (string, error) {
	newHash, ok := hashes[alg]
	if !ok {
		return "", fmt.Errorf("subscriber: unknown signature algorithm %q", alg)
	}
	m := hmac.New(newHash, secret)
	m.Write(body)
	return alg + "=" + hex.EncodeToString(m.Sum(nil)), nil
}

// NewSecret returns a random secret: 32 bytes from crypto/rand, hex-encoded
// (64 characters, WS-SUB-4).
func NewSecret() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return []byte(hex.EncodeToString(b))
}
