package stateurl

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in    string
		plain bool
		want  URL
		err   error
	}{
		{"bolt:/var/lib/x", false, URL{Bolt, "/var/lib/x", "bolt:/var/lib/x"}, nil},
		{"bolt:rel", true, URL{Bolt, "rel", "bolt:rel"}, nil},
		{"bolt:", false, URL{}, ErrNoPath},
		{"bolt:", true, URL{}, ErrNoPath},
		{"postgres://u@h/db", false, URL{Postgres, "", "postgres://u@h/db"}, nil},
		{"postgresql://h/db?sslmode=disable", true, URL{Postgres, "", "postgresql://h/db?sslmode=disable"}, nil},
		{"some/dir", false, URL{}, ErrScheme},
		{"some/dir", true, URL{Bolt, "some/dir", "some/dir"}, nil},
		{"mysql://u:pw@h/db", false, URL{}, ErrScheme},
		{"", false, URL{}, ErrScheme},
		{"", true, URL{}, ErrScheme},
	} {
		got, err := Parse(tc.in, tc.plain)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("Parse(%q, %v) = %+v, %v; want %+v, %v", tc.in, tc.plain, got, err, tc.want, tc.err)
		}
	}
}

// FuzzParse: Parse never panics, a bolt URL's path is what follows
// "bolt:" (or the whole plain string), and Redact never leaves the
// password of a user:password@ URL.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"bolt:x", "bolt:", "postgres://u:pw@h/db", "postgresql://h/db?password=pw", "dir", "", "host=h password=pw"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, plain bool) {
		u, err := Parse(s, plain)
		if err != nil {
			return
		}
		switch u.Kind {
		case Bolt:
			if u.Path == "" || (u.Raw != "bolt:"+u.Path && u.Raw != u.Path) {
				t.Errorf("Parse(%q) = %+v", s, u)
			}
		case Postgres:
			pw := "Zsecret9"
			r := Redact(strings.Replace(s, "://", "://user:"+pw+"@", 1))
			if strings.Contains(r, pw) {
				t.Errorf("Redact left the password: %q", r)
			}
		default:
			t.Errorf("Parse(%q): kind %d", s, u.Kind)
		}
	})
}
