package destination

import (
	"errors"
	"net/url"
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

func TestNormalizeURI(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://h/aA", "http://h/aA"},
		{"http://h/a%41", "http://h/aA"},
		{"HTTP://H.Example:80/a%7e%2D%2e%5F", "http://h.example:80/a~-._"},
		{"http://h/a%3bb%2f", "http://h/a%3Bb%2F"},
		{"http://h/caf%c3%a9", "http://h/caf%C3%A9"},
		{"http://h/100%", "http://h/100%25"},
		{"http://User@H/x", "http://User@H/x"},
		{"http://h/q?x=%41", "http://h/q?x=A"},
		{"/rel%41", "/relA"},
	} {
		if got := NormalizeURI(tt.in); got != tt.want {
			t.Errorf("NormalizeURI(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	m, _ := NewMapper("http://h/pre/", "/dest")
	for _, u := range []string{"http://h/pre/aA", "http://h/pre/a%41", "http://h/%70re/a%41", "http://H/pre/%61A"} {
		if rel, err := m.Rel(u); err != nil || rel != "aA" {
			t.Errorf("Rel(%q) = %q, %v; want aA", u, rel, err)
		}
		if k := m.Key(u); k != "http://h/pre/aA" {
			t.Errorf("Key(%q) = %q", u, k)
		}
	}
	// A refused URI keeps its spelling, so that the refusal names it.
	if k := m.Key("http://h/pre/%2e%2e/x"); k != "http://h/pre/%2e%2e/x" {
		t.Errorf("Key of a refused URI = %q", k)
	}
}

func FuzzNormalizeURI(f *testing.F) {
	for _, s := range []string{"http://h/b/a%41", "HTTP://H/b/%2e%2e/x", "http://h/b/%", "http://h/b/%%41a", "http://u@H/b/%c3%A9", "x"} {
		f.Add(s)
	}
	m, _ := NewMapper("http://h/b/", "/dest")
	f.Fuzz(func(t *testing.T, uri string) {
		n := NormalizeURI(uri)
		if NormalizeURI(n) != n {
			t.Fatalf("not idempotent: %q → %q → %q", uri, n, NormalizeURI(n))
		}
		// Equivalent URIs map to the same file.
		if rel, err := m.Rel(uri); err == nil {
			if rel2, err := m.Rel(n); err != nil || rel2 != rel {
				t.Fatalf("%q maps to %q, its normal form %q to %q, %v", uri, rel, n, rel2, err)
			}
		}
	})
}

// TestMapperAllowHosts: with other hosts allowed, their URIs map under
// DEST/_hosts/<host>[_<port>]/, the Source's own under DEST/ as before,
// and the Source's own that would map into _hosts are refused, so that
// the two never collide.
func TestMapperAllowHosts(t *testing.T) {
	m, err := NewMapper("http://src.example/pre/", "/dest")
	if err != nil {
		t.Fatal(err)
	}
	m.AllowHosts(func(u *url.URL) bool { h := strings.ToLower(u.Hostname()); return h == "cdn.example" || h == "::1" })
	for _, tc := range []struct {
		uri  string
		want string
		err  error
	}{
		{"http://src.example/pre/a.txt", "a.txt", nil},
		{"http://cdn.example/img/a.png", "_hosts/cdn.example/img/a.png", nil},
		{"https://CDN.example:443/img/a.png", "_hosts/cdn.example/img/a.png", nil},
		{"https://cdn.example:8443/x%20y/a.png", "_hosts/cdn.example_8443/x y/a.png", nil},
		{"http://cdn.example:80/a", "_hosts/cdn.example/a", nil},
		{"http://[::1]:8080/a", "_hosts/--1_8080/a", nil},
		{"http://cdn.example/", "", ErrUnmappable},
		{"http://cdn.example/a?x=1", "", ErrUnmappable},
		{"http://u@cdn.example/a", "", ErrUnmappable},
		{"http://cdn.example/%2e%2e/a", "", ErrOutsideBase},
		{"http://cdn.example/a%2Fb", "", ErrUnmappable},
		{"ftp://cdn.example/a", "", ErrOutsideAuthority},
		{"http://other.example/a", "", ErrOutsideAuthority},
		{"http://src.example/pre/_hosts/cdn.example/img/a.png", "", ErrReserved},
		{"http://src.example/pre/_HOSTS/x", "", ErrReserved},
		{"http://src.example/pre/.resourcesync/x", "", ErrReserved},
	} {
		got, err := m.Rel(tc.uri)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("Rel(%s) = %q, %v; want %q, %v", tc.uri, got, err, tc.want, tc.err)
		}
	}
	// Without AllowHosts, _hosts is an ordinary name.
	m2, _ := NewMapper("http://src.example/pre/", "/dest")
	if got, err := m2.Rel("http://src.example/pre/_hosts/a"); err != nil || got != "_hosts/a" {
		t.Errorf("without allowed hosts: %q, %v", got, err)
	}
}

// FuzzMapperAllowHosts: with every other host allowed, a URI maps inside
// the root, other hosts' under _hosts/<one safe name>/, and the Source's
// own never there.
func FuzzMapperAllowHosts(f *testing.F) {
	for _, s := range []string{"http://h/b/a", "http://cdn:8080/a/b", "https://[::1]/x", "http://h/b/_hosts/x", "http://c%2e/..%2f/x", "http://../x"} {
		f.Add(s)
	}
	m, _ := NewMapper("http://h/b/", "/dest")
	m.AllowHosts(func(*url.URL) bool { return true })
	f.Fuzz(func(t *testing.T, uri string) {
		rel, err := m.Rel(uri)
		if err != nil {
			return
		}
		p := m.Path(rel)
		r, err := filepath.Rel("/dest", p)
		if err != nil || r == "." || r == ".." || strings.HasPrefix(r, "../") || filepath.IsAbs(r) || r != filepath.FromSlash(rel) {
			t.Fatalf("%q maps to %q, outside the root or not clean", uri, p)
		}
		segs := strings.Split(rel, "/")
		u, _ := url.Parse(uri)
		own := strings.EqualFold(u.Scheme, "http") && strings.EqualFold(u.Host, "h")
		switch {
		case segs[0] == StateDirName:
			t.Fatalf("%q maps into the state directory", uri)
		case own && strings.EqualFold(segs[0], HostsDirName):
			t.Fatalf("the Source's %q maps into %s", uri, HostsDirName)
		case !own && (segs[0] != HostsDirName || len(segs) < 3 || strings.Trim(segs[1], "abcdefghijklmnopqrstuvwxyz0123456789.-_") != "" && !strings.ContainsFunc(segs[1], func(r rune) bool { return r > 127 })):
			t.Fatalf("another host's %q maps to %q", uri, rel)
		}
	})
}
