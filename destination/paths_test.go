package destination

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestMapperRel(t *testing.T) {
	m, err := NewMapper("http://127.0.0.1:8080/pre/", "/dest")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		uri  string
		want string
		err  error
	}{
		{"http://127.0.0.1:8080/pre/a.txt", "a.txt", nil},
		{"http://127.0.0.1:8080/pre/d/e/f.html", "d/e/f.html", nil},
		{"http://127.0.0.1:8080/pre/sp%20ace%20%231%20100%25%3F.txt", "sp ace #1 100%?.txt", nil},
		{"http://127.0.0.1:8080/pre/caf%C3%A9/x", "caf\u00e9/x", nil},
		{"HTTP://127.0.0.1:8080/pre/case", "case", nil},
		{"http://evil.example/pre/a.txt", "", ErrOutsideAuthority},
		{"https://127.0.0.1:8080/pre/a.txt", "", ErrOutsideAuthority},
		{"http://127.0.0.1:9999/pre/a.txt", "", ErrOutsideAuthority},
		{"http://127.0.0.1:8080/other/a.txt", "", ErrOutsideBase},
		{"http://127.0.0.1:8080/pre/../etc/passwd", "", ErrOutsideBase},
		{"http://127.0.0.1:8080/pre/a/../../etc/passwd", "", ErrOutsideBase},
		{"http://127.0.0.1:8080/pre/%2e%2e/etc/passwd", "", ErrOutsideBase},
		{"http://127.0.0.1:8080/pre/a/%2E%2E/%2E%2E/x", "", ErrOutsideBase},
		{"http://127.0.0.1:8080/pre/./a", "", ErrOutsideBase},
		{"http://127.0.0.1:8080/pre//etc/passwd", "", ErrOutsideBase},
		{"http://127.0.0.1:8080/pre/a%2F..%2F..%2Fx", "", ErrUnmappable},
		{"http://127.0.0.1:8080/pre/a%5C..%5Cx", "", ErrUnmappable},
		{"http://127.0.0.1:8080/pre/nul%00", "", ErrUnmappable},
		{"http://127.0.0.1:8080/pre/q?x=1", "", ErrUnmappable},
		{"http://127.0.0.1:8080/pre/dir/", "", ErrUnmappable},
		{"http://127.0.0.1:8080/pre/", "", ErrUnmappable},
		{"http://user@127.0.0.1:8080/pre/a", "", ErrUnmappable},
		{"http://127.0.0.1:8080/pre/.resourcesync/state.db", "", ErrReserved},
		{"http://127.0.0.1:8080/pre/x/.rs-tmp-1", "", ErrUnmappable},
		{"/pre/relative", "", ErrOutsideAuthority},
	}
	for _, tt := range tests {
		got, err := m.Rel(tt.uri)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("Rel(%q) = %q, %v; want %v", tt.uri, got, err, tt.err)
			} else if !strings.Contains(err.Error(), tt.uri) && tt.uri != "/pre/relative" {
				t.Errorf("Rel(%q): message %q does not name the URI", tt.uri, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Rel(%q) = %q, %v; want %q", tt.uri, got, err, tt.want)
		}
	}
}

func FuzzMapperRel(f *testing.F) {
	for _, s := range []string{"http://h/b/a", "http://h/b/%2e%2e/x", "http://h/b/a/../../x", "http://h/b/.resourcesync/x", "http://h/b/a%2Fb"} {
		f.Add(s)
	}
	m, _ := NewMapper("http://h/b/", "/dest")
	f.Fuzz(func(t *testing.T, uri string) {
		rel, err := m.Rel(uri)
		if err != nil {
			return
		}
		p := m.Path(rel)
		r, err := filepath.Rel("/dest", p)
		if err != nil || r == "." || r == ".." || strings.HasPrefix(r, "../") || filepath.IsAbs(r) {
			t.Fatalf("%q maps to %q, outside the root", uri, p)
		}
		if r != filepath.FromSlash(rel) {
			t.Fatalf("%q: path %q is not the cleaned form of %q", uri, r, rel)
		}
		if first := strings.SplitN(rel, "/", 2)[0]; first == StateDirName {
			t.Fatalf("%q maps into the state directory", uri)
		}
	})
}
