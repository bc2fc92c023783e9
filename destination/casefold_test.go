package destination_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/casefold"
	"github.com/resourcesync-go/resourcesync/internal/testing/casefoldfs"
)

// TestCaseFoldingDestReal: on a file system that ignores case (a FAT
// mount here; macOS and Windows by default), two resources whose paths
// differ only in case would share one file. The second is refused with
// ErrPathCollision naming both URIs; the first keeps its file and bytes,
// in the run that lists both and in a later one that adds the second.
//
// The resources go to DEST/d, a FAT mount (fusefat cannot hold DEST's
// state: it cannot grow a file by truncating it, which bbolt does), so
// the file system is probed there, by the same probe Sync runs in DEST.
func TestCaseFoldingDestReal(t *testing.T) {
	dest := t.TempDir()
	d := filepath.Join(dest, "d")
	os.Mkdir(d, 0o755)
	casefoldfs.MountAt(t, d)
	caseFoldingCollisions(t, dest, true, func(string) (bool, error) {
		f, err := casefold.Probe(d)
		return f.Case, err
	})
}

// caseFoldingCollisions syncs into dest resources whose paths differ only
// in case: in one list, then against files in DEST (real: the file
// system folds case for lookups too, so a file of another spelling is
// found).
func caseFoldingCollisions(t *testing.T, dest string, real bool, folds func(string) (bool, error)) {
	src := newMutableSource(t, map[string]string{
		"/capabilitylist.xml": capList,
		"/resourcelist.xml":   resourceList("{base}d/Foo.txt", "{base}d/foo.txt", "{base}ok.txt"),
		"/d/Foo.txt":          "upper",
		"/d/foo.txt":          "lower",
		"/ok.txt":             "fine",
		"/d/BAR.txt":          "bar upper",
	})
	opts := func() destination.Options {
		o := syncOpts(t, dest)
		o.FoldsCase = folds
		return o
	}
	check := func(rep *destination.Report, first, second string) {
		t.Helper()
		sr := one(t, rep)
		if sr.Failed != 1 || rep.OK(false, false) {
			t.Fatalf("%+v", sr)
		}
		f := sr.Failures[0]
		if f.URI != src.base+second || !strings.Contains(f.Error, "differ only in case") ||
			!strings.Contains(f.Error, src.base+first) || !strings.Contains(f.Error, src.base+second) {
			t.Errorf("failure: %+v", f)
		}
	}
	check(mustSync(t, src.base+"capabilitylist.xml", opts()), "d/Foo.txt", "d/foo.txt")
	if b, err := os.ReadFile(filepath.Join(dest, "d", "Foo.txt")); err != nil || string(b) != "upper" {
		t.Fatalf("d/Foo.txt: %q %v", b, err)
	}
	// A later list adds the other spelling of a name in it: the second
	// is refused.
	src.set("/resourcelist.xml", strings.Replace(resourceList("{base}d/Foo.txt", "{base}d/bar.txt", "{base}d/BAR.txt", "{base}ok.txt"), "2026-01-01", "2026-01-02", 1))
	src.set("/d/bar.txt", "bar lower")
	check(mustSync(t, src.base+"capabilitylist.xml", opts()), "d/bar.txt", "d/BAR.txt")
	if !real {
		return
	}
	// And a third spelling of one already in DEST, listed before it:
	// refused against the recorded file, which keeps its bytes (and its
	// own URI is not refused for coming second).
	src.set("/resourcelist.xml", strings.Replace(resourceList("{base}d/FOO.txt", "{base}d/Foo.txt", "{base}d/bar.txt", "{base}ok.txt"), "2026-01-01", "2026-01-03", 1))
	src.set("/d/FOO.txt", "FOO")
	check(mustSync(t, src.base+"capabilitylist.xml", opts()), "d/Foo.txt", "d/FOO.txt")
	for p, want := range map[string]string{"d/Foo.txt": "upper", "d/bar.txt": "bar lower"} {
		if b, err := os.ReadFile(filepath.Join(dest, filepath.FromSlash(p))); err != nil || string(b) != want {
			t.Errorf("%s: %q %v", p, b, err)
		}
	}
	// A rename at the Source that changes only case converges in two
	// runs: the new spelling is refused while the old file is there, and
	// the old one is deleted; the next run fetches the new one.
	src.set("/resourcelist.xml", strings.Replace(resourceList("{base}d/FOO.txt", "{base}d/bar.txt", "{base}ok.txt"), "2026-01-01", "2026-01-04", 1))
	rep := mustSync(t, src.base+"capabilitylist.xml", opts())
	if sr := one(t, rep); sr.Failed != 1 || sr.Deleted != 1 {
		t.Fatalf("%+v", sr)
	}
	rep = mustSync(t, src.base+"capabilitylist.xml", opts())
	if sr := one(t, rep); sr.Failed != 0 || !rep.OK(false, false) {
		t.Fatalf("%+v", sr)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "d", "FOO.txt")); err != nil || string(b) != "FOO" {
		t.Errorf("d/FOO.txt: %q %v", b, err)
	}
}

// TestCaseFoldingDestSimulated runs the collision checks of a case-folding
// DEST on any file system (Options.FoldsCase says it folds), and checks
// that where it does not fold, both spellings are mirrored.
func TestCaseFoldingDestSimulated(t *testing.T) {
	caseFoldingCollisions(t, t.TempDir(), false, func(string) (bool, error) { return true, nil })

	if folds, err := casefold.Probe(t.TempDir()); err != nil || folds.Folds() {
		t.Skipf("the temporary directory's file system folds names (%+v, %v)", folds, err)
	}
	src := newMutableSource(t, map[string]string{
		"/capabilitylist.xml": capList,
		"/resourcelist.xml":   resourceList("{base}d/Foo.txt", "{base}d/foo.txt"),
		"/d/Foo.txt":          "upper",
		"/d/foo.txt":          "lower",
	})
	dest := t.TempDir()
	if sr := one(t, mustSync(t, src.base+"capabilitylist.xml", syncOpts(t, dest))); sr.Fetched != 2 || sr.Failed != 0 {
		t.Fatalf("%+v", sr)
	}
	for p, want := range map[string]string{"d/Foo.txt": "upper", "d/foo.txt": "lower"} {
		if b, err := os.ReadFile(filepath.Join(dest, filepath.FromSlash(p))); err != nil || string(b) != want {
			t.Errorf("%s: %q %v", p, b, err)
		}
	}
}

// TestCaseFoldingDestIncremental: Change Lists on a DEST that folds case
// (DEST/d a FAT mount): a created resource whose path differs only in case
// from one already mirrored is refused, the first keeps its bytes, and
// the run says so; changes of the first go through.
func TestCaseFoldingDestIncremental(t *testing.T) {
	dest := t.TempDir()
	d := filepath.Join(dest, "d")
	os.Mkdir(d, 0o755)
	casefoldfs.MountAt(t, d)
	dir := t.TempDir()
	writeFile(t, dir, "d/Foo.txt", []byte("upper"))
	writeFile(t, dir, "ok.txt", []byte("fine"))
	ts := startSource(t, dir, nil, nil)
	opts := func() destination.Options {
		o := syncOpts(t, dest)
		o.FoldsCase = func(string) (bool, error) {
			f, err := casefold.Probe(d)
			return f.Case, err
		}
		return o
	}
	if sr := one(t, mustSync(t, ts.base, opts())); sr.Fetched != 2 || sr.Failed != 0 {
		t.Fatalf("baseline: %+v", sr)
	}
	writeFile(t, dir, "d/foo.txt", []byte("lower"))
	writeFile(t, dir, "d/Foo.txt", []byte("upper, changed"))
	ts.update(t)
	rep := mustSync(t, ts.base, opts())
	sr := one(t, rep)
	if sr.Mode != "incremental" || sr.Fetched != 1 || sr.Failed != 1 || rep.OK(false, false) {
		t.Fatalf("incremental: %+v", sr)
	}
	if f := sr.Failures[0]; f.URI != ts.base+"d/foo.txt" || !strings.Contains(f.Error, "differ only in case") || !strings.Contains(f.Error, ts.base+"d/Foo.txt") {
		t.Errorf("failure: %+v", f)
	}
	if b, err := os.ReadFile(filepath.Join(d, "Foo.txt")); err != nil || string(b) != "upper, changed" {
		t.Errorf("d/Foo.txt: %q %v", b, err)
	}
}
