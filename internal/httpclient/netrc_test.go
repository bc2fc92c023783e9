package httpclient

import (
	"strings"
	"testing"
)

func TestParseNetrc(t *testing.T) {
	n, err := ParseNetrc([]byte(`# comment
machine Example.org login alice password "s3 cret\"x"
machine other.example
	login bob
	account acct
	password pw2
macdef init
cd /pub
login mallory password macro

machine example.org login dup password dup
default login anon password guest
machine after.default login x password y
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host, login, pass string
		ok                bool
	}{
		{"example.org", "alice", `s3 cret"x`, true},
		{"EXAMPLE.ORG", "alice", `s3 cret"x`, true},
		{"other.example", "bob", "pw2", true},
		{"after.default", "", "", false},
		{"init", "", "", false},
		{"nowhere", "", "", false},
	} {
		e, ok := n.Lookup(tc.host)
		if ok != tc.ok || e.Login != tc.login || e.Password != tc.pass {
			t.Errorf("Lookup(%s) = %+v %v", tc.host, e, ok)
		}
	}
	if d, ok := n.Default(); !ok || d.Login != "anon" || d.Password != "guest" {
		t.Errorf("Default = %+v %v", d, ok)
	}
}

func TestParseNetrcErrors(t *testing.T) {
	for _, in := range []string{
		"machine",
		"login alice",
		"machine h login",
		"machine h password my secret",
		`machine h password "open`,
		"macdef",
	} {
		_, err := ParseNetrc([]byte(in))
		if err == nil {
			t.Errorf("%q: no error", in)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: error %q shows the password", in, err)
		}
	}
}

// FuzzParseNetrc checks that the parser never panics and that what it
// reads survives a round trip through the quoted form.
func FuzzParseNetrc(f *testing.F) {
	f.Add([]byte("machine h login u password p\ndefault login a password b\n"))
	f.Add([]byte("macdef x\nline\n\nmachine h login \"a b\" password \"c\\\\d\""))
	f.Add([]byte("# c\nmachine h\n\taccount x login y"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := ParseNetrc(data)
		if err != nil {
			return
		}
		var b strings.Builder
		q := func(s string) string {
			return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s) + `"`
		}
		for h, e := range n.machines {
			b.WriteString("machine " + q(h))
			if e.Login != "" {
				b.WriteString(" login " + q(e.Login))
			}
			if e.Password != "" {
				b.WriteString(" password " + q(e.Password))
			}
			b.WriteString("\n")
		}
		n2, err := ParseNetrc([]byte(b.String()))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", b.String(), err)
		}
		for h, e := range n.machines {
			if e2, ok := n2.Lookup(h); !ok || e2 != e {
				t.Fatalf("%q: %+v became %+v", h, e, e2)
			}
		}
	})
}
