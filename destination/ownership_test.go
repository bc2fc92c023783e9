package destination_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
