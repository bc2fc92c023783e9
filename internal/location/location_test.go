package location

import (
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in           string
		scheme, rest string
		err          error
	}{
		{"/srv/state", "file", "/srv/state", nil},
		{"rel/dir", "file", "rel/dir", nil},
		{"./ab:c", "file", "./ab:c", nil},
		{`C:\state`, "file", `C:\state`, nil},
		{"file:///srv/state", "file", filepath.FromSlash("/srv/state"), nil},
		{"file://localhost/srv/a%20b", "file", filepath.FromSlash("/srv/a b"), nil},
		{"FILE:///x", "file", filepath.FromSlash("/x"), nil},
		{"file:rel", "file", "rel", nil},
		{"file://other/x", "", "", ErrScheme},
		{"file://", "", "", ErrNoPath},
		{"file:", "", "", ErrNoPath},
		{"bolt:/srv/state", "bolt", "/srv/state", nil},
		{"bolt:", "", "", ErrNoPath},
		{"mem:one", "mem", "one", nil},
		{"mem://one", "mem", "//one", nil},
		{"postgres://u:pw@h/db", "postgres", "//u:pw@h/db", nil},
		{"PostgreSQL://h/db", "postgresql", "//h/db", nil},
		{"s3://bucket/prefix", "s3", "//bucket/prefix", nil},
		{"ab:c", "ab", "c", nil},
		{"", "", "", ErrEmpty},
		{"host=h dbname=d password=pw", "", "", ErrScheme},
		{"host=/tmp", "", "", ErrScheme},
		{"./host=/tmp", "file", "./host=/tmp", nil},
	} {
		l, err := Parse(tc.in)
		if !errors.Is(err, tc.err) || l.Scheme != tc.scheme || l.Rest != tc.rest {
			t.Errorf("Parse(%q) = %+v, %v; want %q %q %v", tc.in, l, err, tc.scheme, tc.rest, tc.err)
		}
		if err == nil && l.Raw != tc.in {
			t.Errorf("Parse(%q).Raw = %q", tc.in, l.Raw)
		}
	}
	if runtime.GOOS == "windows" {
		if l, err := Parse("file:///C:/state"); err != nil || l.Rest != `C:\state` {
			t.Errorf("file:///C:/state: %+v %v", l, err)
		}
	}
}

func TestRegistry(t *testing.T) {
	unknown := errors.New("no such scheme")
	r := New[func() string]("widget", unknown)
	r.Register("file", func() string { return "file" })
	r.Register("Bolt", func() string { return "bolt" })
	for in, want := range map[string]string{"/x": "file", "file:///x": "file", "BOLT:x": "bolt"} {
		f, l, err := r.Lookup(in)
		if err != nil || f() != want || l.Raw != in {
			t.Errorf("Lookup(%q): %v %+v", in, err, l)
		}
	}
	_, _, err := r.Lookup("mysql://u:s3cret@h/db")
	if !errors.Is(err, unknown) || !strings.Contains(err.Error(), `"mysql"`) || !strings.Contains(err.Error(), "known: bolt, file") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("unknown scheme: %v", err)
	}
	if _, _, err := r.Lookup(""); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty: %v", err)
	}
	if s := r.Schemes(); strings.Join(s, ",") != "bolt,file" {
		t.Errorf("Schemes: %v", s)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second registration did not panic")
		}
	}()
	r.Register("FILE", func() string { return "" })
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h/db":                    "postgres://u:xxxxx@h/db",
		"postgres://u:p/w@x@h/db?sslmode=disable": "postgres://u:xxxxx@h/db?sslmode=disable",
		"postgresql://h/db?password=pw":           "postgresql://h/db?password=xxxxx",
		"postgresql://h/db?sslpassword=pw&a=b":    "postgresql://h/db?a=b&sslpassword=xxxxx",
		"s3://b/p?X-Amz-Signature=abc":            "s3://b/p?X-Amz-Signature=xxxxx",
		"host=h password='p w' user=u":            "host=h password=xxxxx user=u",
		"bolt:/srv/state":                         "bolt:/srv/state",
		"postgres://h/db?%zz":                     "postgres://h/db?xxxxx",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParse: Parse never panics; what it accepts keeps Raw; a plain path
// is scheme file with itself as Rest; Redact never leaves the password of
// a user:password@ URL.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"bolt:x", "bolt:", "postgres://u:pw@h/db", "postgresql://h/db?password=pw", "dir", "", "host=h password=pw", "file:///x", `C:\x`, "mem:a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := Parse(s)
		if err != nil {
			return
		}
		if l.Raw != s || l.Scheme == "" || l.Scheme != strings.ToLower(l.Scheme) {
			t.Errorf("Parse(%q) = %+v", s, l)
		}
		if l.Scheme == "file" && !strings.HasPrefix(strings.ToLower(s), "file:") && l.Rest != s {
			t.Errorf("Parse(%q): a plain path became %q", s, l.Rest)
		}
		if strings.HasPrefix(l.Rest, "//") {
			pw := "Zsecret9"
			r := Redact(strings.Replace(s, "://", "://user:"+pw+"@", 1))
			if strings.Contains(r, pw) {
				t.Errorf("Redact left the password: %q", r)
			}
		}
	})
}
