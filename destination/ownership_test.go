package destination_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
)

// TestOnlyOwnFilesDeleted: deletions at the Source remove files this tool
// installed, but not files changed here since, not files it did not write,
// and nothing with --no-delete.
func TestOnlyOwnFilesDeleted(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.txt", "b.txt", "c.txt", "d.txt"} {
		writeFile(t, dir, n, []byte(n))
	}
	ts := startSource(t, dir, nil, nil)
	dest := t.TempDir()
	writeFile(t, dest, "mine.txt", []byte("the user's own file"))
	if sr := one(t, mustSync(t, ts.base, syncOpts(t, dest))); sr.Fetched != 4 {
		t.Fatalf("%+v", sr)
	}
	// b is edited here; the Source deletes a, b, and (with --no-delete) c.
	os.WriteFile(filepath.Join(dest, "b.txt"), []byte("edited here"), 0o644)
	for _, n := range []string{"a.txt", "b.txt"} {
		os.Remove(filepath.Join(dir, n))
	}
	ts.update(t)
	sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Deleted != 1 || sr.Kept != 1 {
		t.Fatalf("%+v", sr)
	}
	if _, err := os.Stat(filepath.Join(dest, "a.txt")); !os.IsNotExist(err) {
		t.Error("a.txt not deleted")
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "b.txt")); string(b) != "edited here" {
		t.Error("b.txt, edited here, was deleted or overwritten")
	}
	os.Remove(filepath.Join(dir, "c.txt"))
	ts.update(t)
	opt := syncOpts(t, dest)
	opt.NoDelete = true
	sr = one(t, mustSync(t, ts.base, opt))
	// (b.txt may be reported again: changes at the checkpoint instant are
	// re-applied, harmlessly, because lists are inclusive at both ends.)
	if sr.Deleted != 0 || sr.Kept < 1 {
		t.Fatalf("--no-delete: %+v", sr)
	}
	for _, n := range []string{"c.txt", "mine.txt"} {
		if _, err := os.Stat(filepath.Join(dest, n)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	// A forced baseline does not delete files it never wrote either.
	opt = syncOpts(t, dest)
	opt.Mode = destination.ModeBaseline
	sr = one(t, mustSync(t, ts.base, opt))
	if _, err := os.Stat(filepath.Join(dest, "mine.txt")); err != nil || sr.Failed != 0 {
		t.Fatalf("baseline removed mine.txt: %v %+v", err, sr)
	}
}

// TestLocked: two runs on one DEST cannot overlap.
func TestLocked(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("a"))
	ts := startSource(t, dir, nil, nil)
	dest := t.TempDir()
	m, err := destination.Open(context.Background(), ts.base, syncOpts(t, dest))
	if err != nil {
		t.Fatal(err)
	}
	_, err = destination.Sync(context.Background(), ts.base, syncOpts(t, dest))
	if !errors.Is(err, destination.ErrLocked) {
		t.Fatalf("second run: %v", err)
	}
	m.Close()
	if _, err := destination.Sync(context.Background(), ts.base, syncOpts(t, dest)); err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
}

// TestPreexistingFilesNotOwned: a file that was in DEST before the first
// run is adopted when it has the Source's bytes but never deleted, and
// not overwritten when its bytes differ (issue 9, item 7).
func TestPreexistingFilesNotOwned(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"same.txt", "diff.txt", "new.txt"} {
		writeFile(t, dir, n, []byte("source's "+n))
	}
	ts := startSource(t, dir, nil, nil)
	dest := t.TempDir()
	writeFile(t, dest, "same.txt", []byte("source's same.txt"))
	writeFile(t, dest, "diff.txt", []byte("the user's own diff.txt"))

	sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Adopted != 1 || sr.Fetched != 1 || sr.Failed != 1 || len(sr.Failures) != 1 ||
		!strings.HasSuffix(sr.Failures[0].URI, "/diff.txt") || !strings.Contains(sr.Failures[0].Error, "not written by resourcesync") {
		t.Fatalf("first run: %+v", sr)
	}
	t.Logf("failure: %s", sr.Failures[0].Error)
	if b, _ := os.ReadFile(filepath.Join(dest, "diff.txt")); string(b) != "the user's own diff.txt" {
		t.Fatalf("diff.txt overwritten: %q", b)
	}
	// The user moves the file away; the Source deletes same.txt and
	// new.txt: only new.txt, which resourcesync wrote, goes.
	os.Remove(filepath.Join(dest, "diff.txt"))
	os.Remove(filepath.Join(dir, "same.txt"))
	os.Remove(filepath.Join(dir, "new.txt"))
	ts.update(t)
	opt := syncOpts(t, dest)
	var mu sync.Mutex
	var kept []string
	opt.Events = func(e destination.Event) {
		if e.Kind == destination.EventKept {
			mu.Lock()
			kept = append(kept, e.Path+": "+e.Message)
			mu.Unlock()
		}
	}
	sr = one(t, mustSync(t, ts.base, opt))
	if sr.Failed != 0 || sr.Deleted != 1 || sr.Kept != 1 || len(kept) != 1 || !strings.Contains(kept[0], "did not write it") {
		t.Fatalf("second run: %+v, kept %q", sr, kept)
	}
	t.Logf("kept: %s", kept[0])
	if _, err := os.Stat(filepath.Join(dest, "same.txt")); err != nil {
		t.Fatalf("same.txt, not written by resourcesync, was deleted: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dest, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("new.txt not deleted: %v", err)
	}
	os.Remove(filepath.Join(dest, "same.txt"))
	sameTree(t, dir, dest)
}
