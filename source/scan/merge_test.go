package scan_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// mergeNames are names whose byte order differs from a naive walk's:
// '-', '.' and ' ' sort before '/', '0' after it, and bytes >= 0x80
// (invalid UTF-8 included) after ASCII.
var mergeNames = []string{
	"a.", "a.txt", "a/b.c", "a/b/c", "a-b", "a0", "a b", "a/\xff", "a.d/x",
	"b\xc3(", "b\xc3\xa9", "b/\xfe/z", "B", "_", "z/a/b/c/d", "z/a.b", "z/a-b/c",
}

func inventoryPaths(t *testing.T, st store.Store) []string {
	t.Helper()
	var out []string
	for r, err := range st.Resources(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r.Path)
	}
	return out
}

// TestMergeOrder: the walk yields the files in the byte order of their
// paths (the inventory's order), so an unchanged rescan pairs every file
// with its record; changes around names that sort across directory
// boundaries are told apart exactly.
func TestMergeOrder(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "files")
	for _, n := range mergeNames {
		write(t, root, n, "content of "+n)
	}
	db := openDB(t, filepath.Join(t.TempDir(), "state.db"))
	var mu sync.Mutex
	var order []string
	s, err := scan.New(scan.Options{Root: root, Store: db, Workers: 1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	s.SetBeforeHash(func(rel string) { mu.Lock(); order = append(order, rel); mu.Unlock() })
	if st, err := s.Scan(ctx); err != nil || st.Created != len(mergeNames) {
		t.Fatalf("first scan: %+v %v", st, err)
	}
	want := slices.Clone(mergeNames)
	slices.Sort(want) // byte order
	if !slices.Equal(order, want) {
		t.Errorf("walk order\n got %q\nwant %q", order, want)
	}
	if got := inventoryPaths(t, db); !slices.Equal(got, want) {
		t.Errorf("inventory\n got %q\nwant %q", got, want)
	}

	st, err := s.Scan(ctx)
	if err != nil || st.Unchanged != len(mergeNames) || st.Created+st.Updated+st.Deleted+st.Hashed != 0 {
		t.Fatalf("unchanged rescan: %+v %v", st, err)
	}

	// Deletes and creates interleaved with kept files across the
	// boundaries; a file replaced by a directory and the reverse.
	stats, _ := db.Stats(ctx)
	for _, n := range []string{"a.txt", "a/b/c", "a0", "b\xc3(", "z/a.b"} {
		if err := os.Remove(filepath.Join(root, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Join(root, "a.d")); err != nil {
		t.Fatal(err)
	}
	write(t, root, "a.d", "now a file")
	if err := os.Remove(filepath.Join(root, "_")); err != nil {
		t.Fatal(err)
	}
	write(t, root, "_/x", "now a directory")
	for _, n := range []string{"a/b.", "a/b0", "a,", "a/\xff\xff", "b\xc3"} {
		write(t, root, n, "new "+n)
	}
	write(t, root, "a/b.c", "changed")
	st, err = s.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := journalSince(t, db, stats.LastSeq)
	wantJ := []string{
		"created _/x", "created a,", "created a.d", "created a/b.", "created a/b0", "created a/\xff\xff", "created b\xc3",
		"deleted _", "deleted a.d/x", "deleted a.txt", "deleted a/b/c", "deleted a0", "deleted b\xc3(", "deleted z/a.b",
		"updated a/b.c",
	}
	slices.Sort(wantJ)
	if !slices.Equal(got, wantJ) {
		t.Errorf("journal\n got %q\nwant %q", got, wantJ)
	}
	checkInventory(t, db, root, nil)
	if st, err := s.Scan(ctx); err != nil || st.Files != st.Unchanged || st.Created+st.Updated+st.Deleted != 0 {
		t.Errorf("rescan after the changes: %+v %v", st, err)
	}
}

// TestScanPaths: a scan of some paths records exactly the changes under
// them (files, directories, removed and new ones, a directory replaced by
// a file), leaves everything else as the inventory has it, and a full
// scan afterwards finds only the changes outside them.
func TestScanPaths(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "files")
	for _, n := range []string{"d1/x", "d1/sub/y", "d1/sub/y2", "d1.txt", "d10/w", "d2/z", "d2/q", "top.txt", "keep/k", "gone/g1", "gone/sub/g2", "swap/s", ".hidden/h", "skipme/s"} {
		write(t, root, n, "content of "+n)
	}
	db := openDB(t, filepath.Join(t.TempDir(), "state.db"))
	s, err := scan.New(scan.Options{Root: root, Store: db, Skip: []string{"skipme"}, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	// Before the baseline, ScanPaths scans everything.
	st, err := s.ScanPaths(ctx, []string{"d1"})
	if err != nil || !st.Baseline || !st.BaselineDone || st.Created != 12 {
		t.Fatalf("first ScanPaths: %+v %v", st, err)
	}
	scanPaths := func(paths []string, want ...string) {
		t.Helper()
		before, _ := db.Stats(ctx)
		if _, err := s.ScanPaths(ctx, paths); err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		if got := journalSince(t, db, before.LastSeq); !slices.Equal(got, want) {
			t.Errorf("ScanPaths(%q)\n got %q\nwant %q", paths, got, want)
		}
	}

	// Changes inside and outside d1.
	write(t, root, "d1/x", "changed")
	write(t, root, "d1/new", "new")
	write(t, root, "d1/sub/new/n", "new in a new directory")
	os.Remove(filepath.Join(root, "d1/sub/y"))
	write(t, root, "d2/z", "changed outside, a new size")
	write(t, root, "d2/new", "new outside")
	write(t, root, "d1.txt", "changed outside, sorts between d1 and d1/")
	write(t, root, "d10/w", "changed outside, sorts after d1/")
	os.Remove(filepath.Join(root, "top.txt"))
	scanPaths([]string{"d1", "d1/sub", "./d1/"},
		"updated d1/x", "created d1/new", "created d1/sub/new/n", "deleted d1/sub/y")

	// Single files, one of them removed; a path that never existed.
	scanPaths([]string{"d1.txt", "top.txt", "nothing/here", "d2/z"},
		"updated d1.txt", "deleted top.txt", "updated d2/z")

	// A removed directory, a new one, a directory replaced by a file.
	if err := os.RemoveAll(filepath.Join(root, "gone")); err != nil {
		t.Fatal(err)
	}
	write(t, root, "fresh/a/b", "new directory")
	write(t, root, "fresh/c", "new directory")
	os.RemoveAll(filepath.Join(root, "swap"))
	write(t, root, "swap", "a file now")
	scanPaths([]string{"gone", "fresh", "swap"},
		"deleted gone/g1", "deleted gone/sub/g2", "created fresh/a/b", "created fresh/c", "deleted swap/s", "created swap")

	// Hidden and skipped paths publish nothing.
	write(t, root, ".hidden/h2", "hidden")
	write(t, root, "skipme/s2", "skipped")
	write(t, root, "d2/skipme", "skipped by name")
	scanPaths([]string{".hidden", ".hidden/h2", "skipme/s2", "d2/skipme"})

	// A full scan finds what the path scans were not told about.
	scanPaths(nil)
	scanPaths([]string{""}, "created d2/new", "updated d10/w")
	checkInventory(t, db, root, func(rel string) bool { return strings.HasPrefix(rel, "skipme") || strings.HasSuffix(rel, "/skipme") })
	if st, err := s.Scan(ctx); err != nil || st.Files != st.Unchanged || st.Created+st.Updated+st.Deleted != 0 {
		t.Errorf("final rescan: %+v %v", st, err)
	}
}

// TestScanPathsLeavesOthers: a path scan reads and changes no record
// outside its paths, even of files that are gone.
func TestScanPathsLeavesOthers(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "files")
	for _, n := range []string{"a/1", "b/2", "c/3"} {
		write(t, root, n, n)
	}
	db := openDB(t, filepath.Join(t.TempDir(), "state.db"))
	s, err := scan.New(scan.Options{Root: root, Store: db, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := s.ScanPaths(ctx, []string{"b"})
	if err != nil || st.Deleted != 1 || st.Files != 0 {
		t.Fatalf("ScanPaths: %+v %v", st, err)
	}
	if got := inventoryPaths(t, db); !slices.Equal(got, []string{"a/1", "c/3"}) {
		t.Errorf("inventory %q", got)
	}
}

// TestScanPathsMany: more paths in one directory than are scanned one by
// one are scanned as their directory, with the same result.
func TestScanPathsMany(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "files")
	write(t, root, "other/o", "o")
	write(t, root, "many/keep", "k")
	db := openDB(t, filepath.Join(t.TempDir(), "state.db"))
	s, err := scan.New(scan.Options{Root: root, Store: db, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := range 100 {
		p := fmt.Sprintf("many/f%03d", i)
		write(t, root, p, p)
		paths = append(paths, p)
	}
	os.Remove(filepath.Join(root, "many/keep"))
	os.Remove(filepath.Join(root, "other/o"))
	st, err := s.ScanPaths(ctx, paths)
	if err != nil || st.Created != 100 || st.Deleted != 1 {
		t.Fatalf("ScanPaths: %+v %v", st, err)
	}
	if _, err := db.Get(ctx, "other/o"); err != nil {
		t.Errorf("other/o, outside the paths: %v", err)
	}
	// The coalesced scan of many/ found many/keep gone; a full scan
	// finds other/o.
	if st, err := s.Scan(ctx); err != nil || st.Deleted+st.Created+st.Updated != 1 {
		t.Fatalf("Scan: %+v %v", st, err)
	}
	checkInventory(t, db, root, nil)
}

// TestSymlinkedRoot: the root may be a symbolic link to the directory
// (links under it are still not followed).
func TestSymlinkedRoot(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	write(t, real, "a/b", "b")
	write(t, real, "c", "c")
	if err := os.Symlink(filepath.Join(real, "a"), filepath.Join(real, "link")); err != nil {
		t.Skip(err)
	}
	root := filepath.Join(dir, "root")
	if err := os.Symlink(real, root); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, filepath.Join(t.TempDir(), "state.db"))
	s, err := scan.New(scan.Options{Root: root, Store: db, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := s.Scan(ctx); err != nil || st.Created != 2 {
		t.Fatalf("Scan: %+v %v", st, err)
	}
	if got := inventoryPaths(t, db); !slices.Equal(got, []string{"a/b", "c"}) {
		t.Errorf("inventory %q", got)
	}
	write(t, real, "a/new", "new")
	if st, err := s.ScanPaths(ctx, []string{"a"}); err != nil || st.Created != 1 {
		t.Fatalf("ScanPaths: %+v %v", st, err)
	}
}

// TestExclude: excluded paths (the state and output directories, which
// need not be hidden) are neither walked nor scanned by path.
func TestExclude(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "files")
	for _, n := range []string{"a", "state/x", "out/docs/y", "out/z", "statex"} {
		write(t, root, n, n)
	}
	db := openDB(t, filepath.Join(t.TempDir(), "state.db"))
	s, err := scan.New(scan.Options{Root: root, Store: db, Logger: quiet(),
		Exclude: []string{filepath.Join(root, "state"), filepath.Join(root, "out", "docs") + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "out/z", "statex"}
	if got := inventoryPaths(t, db); !slices.Equal(got, want) {
		t.Errorf("inventory %q, want %q", got, want)
	}
	write(t, root, "state/new", "n")
	write(t, root, "out/docs/new", "n")
	if st, err := s.ScanPaths(ctx, []string{"state/new", "out/docs", "state"}); err != nil || st.Files+st.Created != 0 {
		t.Errorf("ScanPaths of excluded paths: %+v %v", st, err)
	}
	if got := inventoryPaths(t, db); !slices.Equal(got, want) {
		t.Errorf("inventory %q, want %q", got, want)
	}
}
