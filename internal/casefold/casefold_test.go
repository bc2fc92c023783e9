package casefold

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/casefoldfs"
)

func TestProbe(t *testing.T) {
	dir := t.TempDir()
	f, err := Probe(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("temporary directory: %+v", f)
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the probe left %v", ents)
	}
	mnt := casefoldfs.Mount(t)
	if f, err := Probe(mnt); err != nil || !f.Case {
		t.Fatalf("FAT mount: %+v %v", f, err)
	}
	if ents, _ := os.ReadDir(mnt); len(ents) != 0 {
		t.Errorf("the probe left %v", ents)
	}
	os.WriteFile(filepath.Join(mnt, "Foo.txt"), nil, 0o644)
	for _, tc := range []struct {
		name, other string
		ok          bool
	}{
		{"foo.txt", "Foo.txt", true},
		{"FOO.TXT", "Foo.txt", true},
		{"Foo.txt", "", false}, // itself
		{"bar.txt", "", false},
	} {
		other, ok, err := Folding{Case: true}.Other(mnt, tc.name)
		if err != nil || ok != tc.ok || other != tc.other {
			t.Errorf("Other(%q) = %q %v %v, want %q %v", tc.name, other, ok, err, tc.other, tc.ok)
		}
	}
}

func TestKey(t *testing.T) {
	c, cn, n := Folding{Case: true}, Folding{Case: true, Norm: true}, Folding{Norm: true}
	for _, tc := range []struct {
		f    Folding
		a, b string
		same bool
	}{
		{Folding{}, "Foo", "foo", false},
		{c, "Foo", "foo", true},
		{c, "Foo", "fooo", false},
		{c, "K", "\u212a", true},        // Kelvin sign
		{c, "ſ", "S", true},             // long s
		{c, "Straße", "STRASSE", false}, // simple folding only, as the file systems
		{c, "\u00e9", "\u00c9", true},   // é É
		{c, "\u00e9", "e\u0301", false}, // NFC, NFD: not folded by case
		{n, "\u00e9", "e\u0301", true},  // but by normalization (macOS)
		{n, "\u00e9", "\u00c9", false},  // not case
		{cn, "\u00c9t\u00e9", "e\u0301T\u00c9", true},
	} {
		if got := tc.f.Key(tc.a) == tc.f.Key(tc.b); got != tc.same {
			t.Errorf("%+v: Key(%q) == Key(%q) is %v", tc.f, tc.a, tc.b, got)
		}
	}
}

// FuzzKey: with case folding alone, two names have one key exactly when
// strings.EqualFold takes them for one (Unicode simple folding).
func FuzzKey(f *testing.F) {
	f.Add("Foo", "foo")
	f.Add("K", "\u212a")
	f.Add("\u00e9", "\u00c9")
	f.Fuzz(func(t *testing.T, a, b string) {
		c := Folding{Case: true}
		if (c.Key(a) == c.Key(b)) != strings.EqualFold(a, b) {
			t.Errorf("Key(%q) = %q, Key(%q) = %q, EqualFold %v", a, c.Key(a), b, c.Key(b), strings.EqualFold(a, b))
		}
	})
}
