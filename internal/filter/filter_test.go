package filter

import (
	"errors"
	"path"
	"slices"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		glob, path string
		want       bool
	}{
		{"*.jpg", "a.jpg", true},
		{"*.jpg", "dir/sub/a.jpg", true}, // unanchored: any depth
		{"*.jpg", "a.jpeg", false},
		{"*.jpg", "a.jpg/b.txt", false}, // matches the end of the path only
		{"/*.jpg", "a.jpg", true},
		{"/*.jpg", "dir/a.jpg", false}, // anchored: * does not cross /
		{"dir/*", "dir/a", true},
		{"dir/*", "x/dir/a", true},
		{"dir/*", "dir/a/b", false},
		{"/dir/**", "dir/a/b/c", true},
		{"/dir/**", "dir", true}, // ** matches no component too
		{"/dir/**", "dirx/a", false},
		{"dir/", "dir/a/b", true}, // a directory: everything below
		{"dir/", "top/dir/a", true},
		{"/dir/", "top/dir/a", false},
		{"**/x.txt", "x.txt", true},
		{"**/x.txt", "a/b/x.txt", true},
		{"/a/**/z", "a/z", true},
		{"/a/**/z", "a/b/c/z", true},
		{"/a/**/z", "a/b/c/y", false},
		{"/a/**/b/**/c", "a/x/b/y/b/c", true},
		{"?.txt", "a.txt", true},
		{"?.txt", "ab.txt", false},
		{"[a-c].txt", "b.txt", true},
		{"[^a-c].txt", "b.txt", false},
		{`\*.txt`, "*.txt", true},
		{`\*.txt`, "a.txt", false},
		{"**", "anything/at/all", true},
		{"Readme", "readme", false}, // case-sensitive
		{"*", "a/b/c", true},
	} {
		got, err := Match(c.glob, c.path)
		if err != nil || got != c.want {
			t.Errorf("Match(%q, %q) = %v, %v; want %v", c.glob, c.path, got, err, c.want)
		}
	}
}

func TestBadGlob(t *testing.T) {
	for _, g := range []string{"", "/", "a//b", "[", "a/[b", `x\`} {
		if _, err := Match(g, "a"); !errors.Is(err, ErrBadRule) {
			t.Errorf("Match(%q): err %v, want ErrBadRule", g, err)
		}
		var rs Rules
		if err := rs.Add(false, g); !errors.Is(err, ErrBadRule) {
			t.Errorf("Add(%q): err %v, want ErrBadRule", g, err)
		}
	}
}

func TestFilter(t *testing.T) {
	type flag struct {
		include bool
		glob    string
	}
	for _, c := range []struct {
		name  string
		flags []flag
		file  string // --filter-from, after the flags
		in    []string
		out   []string
	}{
		{name: "none", in: []string{"a", "b/c"}},
		{name: "exclude", flags: []flag{{false, "*.tmp"}, {false, "/private/**"}},
			in: []string{"a.txt", "private.txt", "x/private/y"}, out: []string{"a.tmp", "d/e.tmp", "private/a", "private/d/e"}},
		{name: "include implies the rest is out", flags: []flag{{true, "*.xml"}},
			in: []string{"a.xml", "d/b.xml"}, out: []string{"a.txt", "d/b.json"}},
		{name: "first match wins", flags: []flag{{false, "/keep/secret.xml"}, {true, "*.xml"}},
			in: []string{"keep/a.xml"}, out: []string{"keep/secret.xml", "keep/a.txt"}},
		{name: "first match wins, other order", flags: []flag{{true, "*.xml"}, {false, "/keep/secret.xml"}},
			in: []string{"keep/a.xml", "keep/secret.xml"}, out: []string{"keep/a.txt"}},
		{name: "filter-from has no implicit exclude",
			file: "# a comment\n\n; another\n+ /docs/**\n- *.bak\n  - /tmp/  \n",
			in:   []string{"docs/a.bak", "x.txt", "y/z"}, out: []string{"y/z.bak", "tmp/q"}},
		{name: "filter-from then an include", flags: []flag{{true, "*.txt"}}, file: "- /old/**\n",
			in: []string{"a.txt", "old/x.txt"}, out: []string{"a.md"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var rs Rules
			for _, fl := range c.flags {
				if err := rs.Add(fl.include, fl.glob); err != nil {
					t.Fatal(err)
				}
			}
			if c.file != "" {
				if err := rs.AddFile(strings.NewReader(c.file), "rules"); err != nil {
					t.Fatal(err)
				}
			}
			f, err := rs.Filter()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range c.in {
				if !f.Include(p) {
					t.Errorf("%s excluded, want included (rules %v)", p, rs.List)
				}
			}
			for _, p := range c.out {
				if f.Include(p) {
					t.Errorf("%s included, want excluded (rules %v)", p, rs.List)
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"*.txt\n", "+*.txt\n", "+ \n", "- [\n", "# ok\n* x\n"} {
		if _, err := Parse(strings.NewReader(in)); !errors.Is(err, ErrBadRule) {
			t.Errorf("Parse(%q): err %v, want ErrBadRule", in, err)
		}
	}
	_, err := Parse(strings.NewReader("+ a\n\nbad line\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("error %v does not name line 3", err)
	}
}

// A glob of many ** against a long path does not take exponential time.
func TestMatchNoBlowUp(t *testing.T) {
	glob := strings.Repeat("**/a/", 50) + "b"
	p := strings.Repeat("a/", 2000) + "c"
	if ok, err := Match(glob, p); err != nil || ok {
		t.Fatalf("Match = %v, %v", ok, err)
	}
}

// FuzzMatch: never panics; an anchored glob without ** is path.Match of
// the whole path; an unanchored one matches p exactly when its anchored
// form matches some suffix of p's components.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{{"*.jpg", "a/b.jpg"}, {"/a/**/z", "a/b/z"}, {"dir/", "x/dir/y"}, {"[a-", "a"}, {`\`, "x"}, {"**", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, glob, p string) {
		got, err := Match(glob, p)
		if err != nil {
			if !errors.Is(err, ErrBadRule) {
				t.Fatalf("error %v does not wrap ErrBadRule", err)
			}
			return
		}
		p = strings.TrimPrefix(p, "/")
		g := strings.TrimPrefix(glob, "/")
		if strings.Contains(g, "**") || strings.HasSuffix(g, "/") {
			return
		}
		if strings.HasPrefix(glob, "/") {
			want, _ := path.Match(g, p)
			if got != want {
				t.Fatalf("Match(%q, %q) = %v, path.Match says %v", glob, p, got, want)
			}
			return
		}
		comps := strings.Split(p, "/")
		// An empty component ("a//b", "//") is no path a mirror holds
		// (paths are cleaned before filtering), and the suffix model
		// breaks on it: path.Match lets a class such as [^0] match the
		// "/" that the joined suffix of two empty components is.
		if slices.Contains(comps, "") {
			return
		}
		want := false
		for i := range comps {
			if ok, _ := path.Match(g, strings.Join(comps[i:], "/")); ok {
				want = true
				break
			}
		}
		if got != want {
			t.Fatalf("Match(%q, %q) = %v, by suffixes %v", glob, p, got, want)
		}
	})
}

// FuzzParse: a --filter-from file never panics the parser, and every rule
// it returns compiles.
func FuzzParse(f *testing.F) {
	f.Add("+ *.txt\n- /tmp/**\n# c\n")
	f.Add("bad\n")
	f.Fuzz(func(t *testing.T, s string) {
		l, err := Parse(strings.NewReader(s))
		if err != nil {
			return
		}
		if _, err := New(l); err != nil {
			t.Fatalf("Parse gave %v, which does not compile: %v", l, err)
		}
	})
}
