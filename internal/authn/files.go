package authn

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// maxFileBytes bounds a token or htpasswd file: credentials, not data.
const maxFileBytes = 4 << 20

// ErrFormat is wrapped by every parse error of a token or htpasswd file.
var ErrFormat = errors.New("malformed credentials file")

// lines calls f with each line of r that is neither blank nor a '#'
// comment, trimmed, with its 1-based number.
func lines(r io.Reader, f func(n int, line string) error) error {
	data, err := io.ReadAll(io.LimitReader(r, maxFileBytes+1))
	if err != nil {
		return err
	}
	if len(data) > maxFileBytes {
		return fmt.Errorf("%w: larger than %d bytes", ErrFormat, maxFileBytes)
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // a BOM some editors write
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxFileBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if err := f(n, line); err != nil {
			return err
		}
	}
	return sc.Err()
}

// ParseTokens reads a token file: one bearer token a line, blank lines
// and '#' comments skipped. A token is RFC 6750's b64token (letters,
// digits, "-._~+/", then '=' padding): what a client can send in an
// Authorization header unchanged. The error names the line, never the
// token.
func ParseTokens(r io.Reader) ([]string, error) {
	var toks []string
	err := lines(r, func(n int, line string) error {
		if !isToken(line) {
			return fmt.Errorf("%w: line %d: a token is one word of letters, digits and -._~+/ (then = padding)", ErrFormat, n)
		}
		toks = append(toks, line)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("%w: no token in it", ErrFormat)
	}
	return toks, nil
}

// isToken reports whether s is an RFC 6750 b64token.
func isToken(s string) bool {
	t := strings.TrimRight(s, "=")
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			return false
		}
	}
	return true
}

// ParseHtpasswd reads an Apache htpasswd file of USER:HASH lines (blank
// lines and '#' comments skipped) whose hashes are all bcrypt ("htpasswd
// -B": $2y$, $2a$ or $2b$). Any other format is an error naming the line
// and the user: accepting an MD5 or plain-text line would lower the bar
// silently. It returns the hash of each user.
func ParseHtpasswd(r io.Reader) (map[string][]byte, error) {
	users := map[string][]byte{}
	err := lines(r, func(n int, line string) error {
		user, hash, ok := strings.Cut(line, ":")
		if !ok || user == "" {
			return fmt.Errorf("%w: line %d: want USER:HASH", ErrFormat, n)
		}
		for _, c := range user {
			if c < 0x20 || c == 0x7f {
				return fmt.Errorf("%w: line %d: a control character in the user name", ErrFormat, n)
			}
		}
		if _, dup := users[user]; dup {
			return fmt.Errorf("%w: line %d: user %q a second time", ErrFormat, n, user)
		}
		if kind := hashKind(hash); kind != "" {
			return fmt.Errorf("%w: line %d (user %q): %s hash; only bcrypt hashes ($2y$, from \"htpasswd -B\") are accepted", ErrFormat, n, user, kind)
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil || len(hash) != 60 {
			return fmt.Errorf("%w: line %d (user %q): not a valid bcrypt hash", ErrFormat, n, user)
		}
		users[user] = []byte(hash)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("%w: no user in it", ErrFormat)
	}
	return users, nil
}

// hashKind names the format of an htpasswd hash that is not bcrypt; ""
// for bcrypt.
func hashKind(h string) string {
	switch {
	case strings.HasPrefix(h, "$2y$"), strings.HasPrefix(h, "$2a$"), strings.HasPrefix(h, "$2b$"):
		return ""
	case strings.HasPrefix(h, "$apr1$"):
		return "an MD5 ($apr1$)"
	case strings.HasPrefix(h, "{SHA}"):
		return "a SHA-1 ({SHA})"
	case strings.HasPrefix(h, "$5$"), strings.HasPrefix(h, "$6$"), strings.HasPrefix(h, "$1$"):
		return "a crypt(3) " + h[:3]
	case strings.HasPrefix(h, "$"):
		return "an unknown"
	case h == "":
		return "an empty"
	}
	return "a plain-text or DES crypt"
}
