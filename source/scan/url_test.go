package scan_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/source/scan"
)

func TestEscapePath(t *testing.T) {
	for _, tc := range []struct{ rel, want string }{
		{"a.txt", "a.txt"},
		{"dir/sub/file.html", "dir/sub/file.html"},
		{"with space.txt", "with%20space.txt"},
		{"100%.txt", "100%25.txt"},
		{"a#b", "a%23b"},
		{"what?.txt", "what%3F.txt"},
		{"semi;colon,comma", "semi%3Bcolon%2Ccomma"},
		{"plus+amp&eq=", "plus+amp&eq="},
		{"café/naïve.txt", "caf%C3%A9/na%C3%AFve.txt"},
		{"日本.txt", "%E6%97%A5%E6%9C%AC.txt"},
		{"bad\xffutf8\xc3", "bad%FFutf8%C3"},
		{"a\\b", "a%5Cb"},
		{"tab\tnl\n", "tab%09nl%0A"},
	} {
		got := scan.EscapePath(tc.rel)
		if got != tc.want {
			t.Errorf("EscapePath(%q) = %q, want %q", tc.rel, got, tc.want)
		}
		back, err := scan.UnescapePath(got)
		if err != nil || back != tc.rel {
			t.Errorf("UnescapePath(%q) = %q, %v; want %q", got, back, err, tc.rel)
		}
	}
	if got := scan.ResourceURL("http://example.com/res", "a b/c#d"); got != "http://example.com/res/a%20b/c%23d" {
		t.Errorf("ResourceURL = %q", got)
	}
	if got := scan.ResourceURL("http://example.com/", "x"); got != "http://example.com/x" {
		t.Errorf("ResourceURL = %q", got)
	}
	if _, err := scan.UnescapePath("a%2Fb"); err == nil {
		t.Error("UnescapePath accepted an escaped slash")
	}
	if _, err := scan.UnescapePath("a%zz"); err == nil {
		t.Error("UnescapePath accepted a bad escape")
	}
}

// FuzzEscapePath: EscapePath (with its fast path for paths that need no
// escaping) is each segment url.PathEscape'd, and UnescapePath reverses it.
func FuzzEscapePath(f *testing.F) {
	for _, s := range []string{"a/b.txt", "d000/f000001.bin", "a b/c", "a//b", "x;y,z?w", "~_.-/", "é/%41", "\xff", "a$&+:=@b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		segs := strings.Split(rel, "/")
		for i, seg := range segs {
			segs[i] = url.PathEscape(seg)
		}
		want := strings.Join(segs, "/")
		got := scan.EscapePath(rel)
		if got != want {
			t.Fatalf("EscapePath(%q) = %q, want %q", rel, got, want)
		}
		if back, err := scan.UnescapePath(got); err != nil || back != rel {
			t.Fatalf("UnescapePath(%q) = %q, %v; want %q", got, back, err, rel)
		}
	})
}
