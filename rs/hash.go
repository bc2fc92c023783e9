package rs

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Hash algorithm tokens (RS-URL-5).
const (
	MD5    = "md5"
	SHA1   = "sha-1"
	SHA256 = "sha-256"
)

// Hash is one algorithm:digest token of a hash attribute. Value is the
// digest as written; for md5, sha-1 and sha-256 it should be hex.
type Hash struct {
	Alg   string
	Value string
}

// Hashes is the content of a hash attribute: one or more tokens.
type Hashes []Hash

// ErrHash is matched (errors.Is) by every hash syntax error.
var ErrHash = errors.New("invalid hash")

// hexLen is the digest length in hex digits of each algorithm we verify.
var hexLen = map[string]int{MD5: 32, SHA1: 40, SHA256: 64}

// DigestHexLen returns the length in hex digits of the algorithm's digest,
// or 0 for an algorithm the framework does not name.
func DigestHexLen(alg string) int { return hexLen[alg] }

// Get returns the digest for alg, or "".
func (h Hashes) Get(alg string) string {
	for _, x := range h {
		if x.Alg == alg {
			return x.Value
		}
	}
	return ""
}

// String formats the hashes as an attribute value.
func (h Hashes) String() string { return string(h.appendTo(nil)) }

func (h Hashes) appendTo(b []byte) []byte {
	for i, x := range h {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, x.Alg...)
		b = append(b, ':')
		b = append(b, x.Value...)
	}
	return b
}

// SplitHashes splits a hash attribute into tokens without judging them:
// the decoder keeps what a document says, the validator judges it. A token
// without a colon becomes a Hash with an empty Alg.
func SplitHashes(s string) Hashes {
	var h Hashes
	for i := 0; i < len(s); {
		for i < len(s) && isSpaceByte(s[i]) {
			i++
		}
		if i == len(s) {
			break
		}
		j := i
		c := -1
		for j < len(s) && !isSpaceByte(s[j]) {
			if c < 0 && s[j] == ':' {
				c = j
			}
			j++
		}
		if h == nil {
			// Usually one token per space: size the slice once.
			h = make(Hashes, 0, 1+strings.Count(s[j:], " "))
		}
		if c >= 0 {
			h = append(h, Hash{Alg: s[i:c], Value: s[c+1 : j]})
		} else {
			h = append(h, Hash{Value: s[i:j]})
		}
		i = j
	}
	return h
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// ParseHashes parses a hash attribute strictly: whitespace-separated
// algorithm:hexdigest tokens, each algorithm at most once, md5/sha-1/
// sha-256 digests of the right length in hex (lowercased on return).
// Tokens of other algorithms are kept as written.
func ParseHashes(s string) (Hashes, error) {
	h := SplitHashes(s)
	if len(h) == 0 {
		return nil, fmt.Errorf("%w: empty hash attribute", ErrHash)
	}
	seen := map[string]bool{}
	for i, x := range h {
		if err := x.Check(); err != nil {
			return nil, err
		}
		if seen[x.Alg] {
			return nil, fmt.Errorf("%w: algorithm %q given twice", ErrHash, x.Alg)
		}
		seen[x.Alg] = true
		if hexLen[x.Alg] > 0 {
			h[i].Value = strings.ToLower(x.Value)
		}
	}
	return h, nil
}

// Check reports whether the token is well formed: a non-empty algorithm
// and digest, and for md5/sha-1/sha-256 a hex digest of the right length.
func (x Hash) Check() error {
	if x.Alg == "" {
		return fmt.Errorf("%w: %q has no algorithm (want algorithm:digest)", ErrHash, x.Value)
	}
	if x.Value == "" {
		return fmt.Errorf("%w: %q has no digest", ErrHash, x.Alg+":")
	}
	if strings.Contains(x.Value, ",") {
		return fmt.Errorf("%w: %q: tokens are separated by white space, not commas", ErrHash, x.Alg+":"+x.Value)
	}
	n := hexLen[x.Alg]
	if n == 0 {
		return nil
	}
	if len(x.Value) != n || !isHex(x.Value) {
		if _, ok := Base64ToHex(x.Alg, x.Value); ok {
			return fmt.Errorf("%w: %s digest %q is base64, not hex", ErrHash, x.Alg, x.Value)
		}
		return fmt.Errorf("%w: %s digest %q is not %d hex digits", ErrHash, x.Alg, x.Value, n)
	}
	return nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// Base64ToHex converts a base64 digest (as written by the 2012 alpha draft
// and old versions of the reference library) to hex, if it decodes to a
// digest of the algorithm's length.
func Base64ToHex(alg, v string) (string, bool) {
	want := hexLen[alg] / 2
	if want == 0 {
		return "", false
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil && len(b) == want {
			return hex.EncodeToString(b), true
		}
	}
	return "", false
}
