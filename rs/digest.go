package rs

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Errors of DecodeDigests, matched with errors.Is; both also match ErrHash.
var (
	// ErrDigestEncoding: a digest of a known algorithm that is neither
	// hex nor base64 of the algorithm's length, or a token without an
	// algorithm or without a digest.
	ErrDigestEncoding = errors.New("undecodable digest")
	// ErrDigestConflict: two digests of one algorithm that differ.
	ErrDigestConflict = errors.New("conflicting digests")
)

// DigestError is the typed error of DecodeDigests.
type DigestError struct {
	Alg   string // as written
	Value string // as written
	Err   error  // ErrDigestEncoding or ErrDigestConflict
}

func (e *DigestError) Error() string {
	if e.Err == ErrDigestConflict {
		return fmt.Sprintf("%v: two different %s digests (%s)", e.Err, e.Alg, e.Value)
	}
	return fmt.Sprintf("%v: %s:%s (want hex or base64 of the algorithm's length)", e.Err, e.Alg, e.Value)
}

// Unwrap makes the error match its sentinel and ErrHash.
func (e *DigestError) Unwrap() []error { return []error{e.Err, ErrHash} }

// Digests are the decoded digests of a hash attribute: raw bytes per
// verifiable algorithm (nil when not offered) and the algorithms that
// cannot be verified, as written.
type Digests struct {
	MD5, SHA1, SHA256 []byte
	Unknown           []string
}

// Get returns the raw digest for alg (MD5, SHA1 or SHA256), or nil.
func (d *Digests) Get(alg string) []byte {
	switch alg {
	case MD5:
		return d.MD5
	case SHA1:
		return d.SHA1
	case SHA256:
		return d.SHA256
	}
	return nil
}

// Verifiable reports whether at least one digest can be checked.
func (d *Digests) Verifiable() bool { return d.MD5 != nil || d.SHA1 != nil || d.SHA256 != nil }

// CanonicalAlg maps an algorithm name as Sources write it to MD5, SHA1 or
// SHA256, ignoring case and '-'/'_' ("SHA-256", "sha256", "MD5"), or
// returns "" for any other algorithm.
func CanonicalAlg(name string) string {
	if len(name) > 8 {
		return ""
	}
	var b [8]byte
	n := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '-' || c == '_':
			continue
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		b[n] = c
		n++
	}
	switch string(b[:n]) {
	case "md5":
		return MD5
	case "sha1":
		return SHA1
	case "sha256":
		return SHA256
	}
	return ""
}

// DecodeDigest decodes one digest of a known algorithm: hex in either
// case, or standard or URL-safe base64, padded or not, of the algorithm's
// length. The lengths cannot be confused: for every algorithm the hex form
// is longer than the base64 ones.
func DecodeDigest(alg, v string) ([]byte, bool) {
	n := hexLen[alg] / 2
	if n == 0 {
		return nil, false
	}
	if len(v) == 2*n {
		b, err := hex.DecodeString(v)
		return b, err == nil
	}
	for _, enc := range [...]*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if enc.DecodedLen(len(v)) < n || len(v) > enc.EncodedLen(n) {
			continue
		}
		if b, err := enc.Strict().DecodeString(v); err == nil && len(b) == n {
			return b, true
		}
	}
	return nil, false
}

// DecodeDigests decodes every token of a hash attribute, in any spelling
// Sources use (see CanonicalAlg and DecodeDigest). It fails closed: a
// digest of a known algorithm that does not decode, a token without an
// algorithm or digest, or two different digests of one algorithm is a
// *DigestError, and the bytes must not be trusted. Unknown algorithms are
// listed in Unknown, never treated as verified.
func DecodeDigests(h Hashes) (Digests, error) {
	var d Digests
	for _, x := range h {
		if x.Alg == "" || x.Value == "" {
			return Digests{}, &DigestError{Alg: x.Alg, Value: x.Value, Err: ErrDigestEncoding}
		}
		alg := CanonicalAlg(x.Alg)
		if alg == "" {
			d.Unknown = append(d.Unknown, x.Alg)
			continue
		}
		b, ok := DecodeDigest(alg, x.Value)
		if !ok {
			return Digests{}, &DigestError{Alg: x.Alg, Value: x.Value, Err: ErrDigestEncoding}
		}
		var dst *[]byte
		switch alg {
		case MD5:
			dst = &d.MD5
		case SHA1:
			dst = &d.SHA1
		default:
			dst = &d.SHA256
		}
		if *dst != nil && !bytes.Equal(*dst, b) {
			return Digests{}, &DigestError{Alg: alg, Value: hex.EncodeToString(*dst) + " and " + hex.EncodeToString(b), Err: ErrDigestConflict}
		}
		*dst = b
	}
	return d, nil
}

// UnknownList formats the unknown algorithms for a message.
func (d *Digests) UnknownList() string { return strings.Join(d.Unknown, ", ") }
