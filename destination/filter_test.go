package destination_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/filter"
)

func mustFilter(t *testing.T, rules ...filter.Rule) func(string) bool {
	t.Helper()
	f, err := filter.New(rules)
	if err != nil {
		t.Fatal(err)
	}
	return f.Include
}

// TestFilterSync: paths the filters leave out are never fetched nor
// deleted, whatever the Source does to them (a file mirrored before it
// was excluded stays), in an incremental run, a baseline and an audit with
// repair, which reports no difference for them.
func TestFilterSync(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"keep/a.txt", "keep/b.txt", "skip/c.txt", "x.tmp", "d/y.tmp", "top.txt"} {
		writeFile(t, dir, n, []byte("v1 "+n))
	}
	ts := startSource(t, dir, nil, nil)
	dest := t.TempDir()
	if sr := one(t, mustSync(t, ts.base, syncOpts(t, dest))); sr.Fetched != 6 {
		t.Fatalf("first sync, no filter: %+v", sr)
	}
	include := mustFilter(t, filter.Rule{Glob: "*.tmp"}, filter.Rule{Glob: "/skip/**"})
	filtered := func(mode destination.Mode) destination.Options {
		opt := syncOpts(t, dest)
		opt.Include, opt.Mode = include, mode
		return opt
	}

	// The Source deletes two excluded files, edits another and an
	// included one, and adds one of each.
	os.Remove(filepath.Join(dir, "x.tmp"))
	os.Remove(filepath.Join(dir, "skip/c.txt"))
	writeFile(t, dir, "d/y.tmp", []byte("v2 d/y.tmp"))
	writeFile(t, dir, "keep/a.txt", []byte("v2 keep/a.txt"))
	writeFile(t, dir, "skip/new.txt", []byte("new, excluded"))
	writeFile(t, dir, "keep/new.txt", []byte("new, included"))
	ts.update(t)
	want := map[string]string{
		"keep/a.txt": "v2 keep/a.txt", "keep/b.txt": "v1 keep/b.txt", "keep/new.txt": "new, included", "top.txt": "v1 top.txt",
		"skip/c.txt": "v1 skip/c.txt", "x.tmp": "v1 x.tmp", "d/y.tmp": "v1 d/y.tmp", // excluded: as they were
	}
	check := func(what string) {
		t.Helper()
		got := tree(t, dest)
		for k, v := range want {
			if string(got[k]) != v {
				t.Errorf("%s: %s is %q, want %q", what, k, got[k], v)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: %s in DEST, want it left out", what, k)
			}
		}
	}
	sr := one(t, mustSync(t, ts.base, filtered(destination.ModeAuto)))
	if sr.Fetched != 2 || sr.Deleted != 0 || sr.Failed != 0 || sr.Excluded < 4 {
		t.Errorf("incremental: %+v", sr)
	}
	if !strings.Contains(sr.Summary(false), "excluded") {
		t.Errorf("summary does not say what was excluded: %s", sr.Summary(false))
	}
	check("incremental")

	sr = one(t, mustSync(t, ts.base, filtered(destination.ModeBaseline)))
	if sr.Fetched != 0 || sr.Deleted != 0 || sr.Kept != 0 || sr.Failed != 0 || sr.Excluded != 2 {
		t.Errorf("baseline: %+v", sr)
	}
	check("baseline")

	opt := filtered(destination.ModeAudit)
	opt.Repair = true
	rep := mustSync(t, ts.base, opt)
	if sr := one(t, rep); sr.Differences() != 0 || sr.Deleted != 0 || !rep.OK(true, false) {
		t.Errorf("audit: %+v", sr)
	}
	check("audit")

	// A baseline without the filters makes the same DEST the Source again.
	opt = syncOpts(t, dest)
	opt.Mode = destination.ModeBaseline
	one(t, mustSync(t, ts.base, opt))
	sameTree(t, dir, dest)
}

// TestFilterFreshBaseline: a first sync with --include takes only what
// it names.
func TestFilterFreshBaseline(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.xml", "d/b.xml", "d/c.txt", "e.json"} {
		writeFile(t, dir, n, []byte(n))
	}
	ts := startSource(t, dir, nil, nil)
	dest := t.TempDir()
	var rs filter.Rules
	if err := rs.Add(true, "*.xml"); err != nil {
		t.Fatal(err)
	}
	f, err := rs.Filter()
	if err != nil {
		t.Fatal(err)
	}
	opt := syncOpts(t, dest)
	opt.Include = f.Include
	sr := one(t, mustSync(t, ts.base, opt))
	if sr.Fetched != 2 || sr.Excluded != 2 {
		t.Errorf("%+v", sr)
	}
	got := tree(t, dest)
	if len(got) != 2 || got["a.xml"] == nil || got["d/b.xml"] == nil {
		t.Errorf("DEST holds %v", keys(got))
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
