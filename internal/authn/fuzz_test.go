package authn

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// FuzzParseTokens: no panic; every token returned is a line of the input,
// one word, never a comment.
func FuzzParseTokens(f *testing.F) {
	for _, s := range []string{"tok\n", "# c\n\n a=b== \n", "\uFEFFx\r\ny\r\n", "a b\n", "==\n", "#\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks, err := ParseTokens(strings.NewReader(s))
		if err != nil {
			if len(toks) != 0 {
				t.Fatal("tokens with an error")
			}
			return
		}
		if len(toks) == 0 {
			t.Fatal("no token, no error")
		}
		for _, tok := range toks {
			if !isToken(tok) || tok[0] == '#' || !strings.Contains(s, tok) {
				t.Fatalf("token %q from %q", tok, s)
			}
		}
	})
}

// FuzzParseHtpasswd: no panic; every hash accepted is a bcrypt one that
// bcrypt reads, every user a name of the input.
func FuzzParseHtpasswd(f *testing.F) {
	h, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	for _, s := range []string{"u:" + string(h) + "\n", "# c\nu:$apr1$x$y\n", "u:{SHA}x\n", "u:plain\n", ":" + string(h), "u:" + string(h) + "\nu:" + string(h), "u:$2y$04$short\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		users, err := ParseHtpasswd(strings.NewReader(s))
		if err != nil {
			return
		}
		for u, h := range users {
			if u == "" || strings.Contains(u, ":") || !strings.Contains(s, u+":") {
				t.Fatalf("user %q from %q", u, s)
			}
			if _, err := bcrypt.Cost(h); err != nil || !bytes.HasPrefix(h, []byte("$2")) {
				t.Fatalf("hash %q accepted: %v", h, err)
			}
		}
	})
}
