package destination_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/destination/fetch"
)

// TestHostileStateLinks: the state directory, its tmp directory and the
// state database are opened by path, so a symbolic link planted at any of
// them must stop the run before anything outside DEST is created, emptied
// or rewritten (found by an attack review: a linked .resourcesync/tmp was
// removed recursively through the link).
func TestHostileStateLinks(t *testing.T) {
	for _, tc := range []struct {
		name string
		// plant makes the link inside dest, pointing into outside.
		plant func(t *testing.T, dest, outside string)
	}{
		{"state dir", func(t *testing.T, dest, outside string) {
			must(t, os.Symlink(outside, filepath.Join(dest, ".resourcesync")))
		}},
		{"tmp dir", func(t *testing.T, dest, outside string) {
			must(t, os.MkdirAll(filepath.Join(dest, ".resourcesync"), 0o700))
			must(t, os.Symlink(filepath.Join(outside, "tmp"), filepath.Join(dest, ".resourcesync", "tmp")))
		}},
		{"state db", func(t *testing.T, dest, outside string) {
			must(t, os.MkdirAll(filepath.Join(dest, ".resourcesync"), 0o700))
			must(t, os.Symlink(filepath.Join(outside, "state.db"), filepath.Join(dest, ".resourcesync", "state.db")))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newMutableSource(t, map[string]string{
				"/capabilitylist.xml": capList,
				"/resourcelist.xml":   resourceList("{base}ok.txt"),
				"/ok.txt":             "fine",
			})
			base := t.TempDir()
			dest, outside := filepath.Join(base, "dest"), filepath.Join(base, "outside")
			must(t, os.MkdirAll(dest, 0o755))
			must(t, os.MkdirAll(filepath.Join(outside, "tmp", "precious"), 0o755))
			must(t, os.WriteFile(filepath.Join(outside, "tmp", "precious", "data"), []byte("keep me"), 0o644))
			tc.plant(t, dest, outside)

			_, err := destination.Sync(context.Background(), src.base+"capabilitylist.xml", syncOpts(t, dest))
			if !errors.Is(err, fetch.ErrSymlinkInDest) || !errors.Is(err, destination.ErrState) {
				t.Fatalf("sync: %v, want ErrState wrapping ErrSymlinkInDest", err)
			}
			t.Logf("refused: %v", err)
			if b, err := os.ReadFile(filepath.Join(outside, "tmp", "precious", "data")); err != nil || string(b) != "keep me" {
				t.Errorf("outside file changed: %q, %v", b, err)
			}
			ents, _ := os.ReadDir(outside)
			if len(ents) != 1 || ents[0].Name() != "tmp" {
				t.Errorf("outside holds %d entries, want only tmp: %v", len(ents), ents)
			}
			if _, err := os.Lstat(filepath.Join(dest, "ok.txt")); err == nil {
				t.Errorf("a resource was installed although the state could not be opened safely")
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
