package local_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/storage"
	"github.com/resourcesync-go/resourcesync/storage/local"
	"github.com/resourcesync-go/resourcesync/storage/storagetest"
)

func TestTargetSuite(t *testing.T) {
	storagetest.TargetSuite(t, func(t *testing.T) storage.Target {
		tg, err := storage.OpenTarget(context.Background(), filepath.Join(t.TempDir(), "mirror"))
		if err != nil {
			t.Fatal(err)
		}
		return tg
	})
}

// TestTargetSuiteFileURL opens the Target from a file:// location.
func TestTargetSuiteFileURL(t *testing.T) {
	storagetest.TargetSuite(t, func(t *testing.T) storage.Target {
		dir := filepath.ToSlash(t.TempDir())
		if !strings.HasPrefix(dir, "/") {
			dir = "/" + dir // file:///C:/…
		}
		tg, err := storage.OpenTarget(context.Background(), "file://"+dir)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	})
}

// TestTargetNoSymlink: a symbolic link inside the root, at the key or
// among its directories, is refused (ErrRefused) by every operation, and
// nothing is written, read or removed outside the root through it.
func TestTargetNoSymlink(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "victim"), []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "dirlink")); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	if err := os.Symlink(filepath.Join(outside, "victim"), filepath.Join(root, "filelink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../dirlink", filepath.Join(root, "in", "rel")); err != nil {
		t.Fatal(err)
	}
	tg, err := local.OpenTarget(root)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	for _, key := range []string{"dirlink/victim", "dirlink/new", "filelink", "in/rel/victim", "in/rel/sub/new"} {
		if w, err := tg.Create(ctx, key, storage.PutOptions{Size: -1}); !errors.Is(err, storage.ErrRefused) {
			if err == nil {
				w.Write([]byte("pwned"))
				w.Commit(ctx)
			}
			t.Errorf("Create(%q): %v, want ErrRefused", key, err)
		}
		if _, err := tg.Stat(ctx, key); !errors.Is(err, storage.ErrRefused) {
			t.Errorf("Stat(%q): %v, want ErrRefused", key, err)
		}
		if r, _, err := tg.Open(ctx, key); !errors.Is(err, storage.ErrRefused) {
			if r != nil {
				r.Close()
			}
			t.Errorf("Open(%q): %v, want ErrRefused", key, err)
		}
		if err := tg.Remove(ctx, key, ""); !errors.Is(err, storage.ErrRefused) {
			t.Errorf("Remove(%q): %v, want ErrRefused", key, err)
		}
	}
	var listed []string
	if err := tg.List(ctx, "", func(in storage.Info) error { listed = append(listed, in.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 0 {
		t.Errorf("listed through links: %q", listed)
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 1 {
		t.Errorf("outside the root now holds %d entries", len(ents))
	}
	if b, err := os.ReadFile(filepath.Join(outside, "victim")); err != nil || string(b) != "keep me" {
		t.Errorf("file outside the root: %q, %v", b, err)
	}
}

// TestTargetStagesBesideAndLeavesNoTemp: a staged object is a temporary
// file in its key's directory, never listed; Abort and a failed Commit
// remove it, and Remove takes the directories it empties.
func TestTargetStagesBesideAndLeavesNoTemp(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	tg, err := local.OpenTarget(root)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	w, err := tg.Create(ctx, "a/b/c", storage.PutOptions{Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("abc"))
	ents, _ := os.ReadDir(filepath.Join(root, "a", "b"))
	if len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), local.TempPrefix) {
		t.Fatalf("staged as %v, want one %s* file in a/b", ents, local.TempPrefix)
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	w, _ = tg.Create(ctx, "a/b/d", storage.PutOptions{Size: 99})
	w.Write([]byte("short"))
	if _, err := w.Commit(ctx); !errors.Is(err, storage.ErrIntegrity) {
		t.Fatalf("Commit of a short object: %v", err)
	}
	w, _ = tg.Create(ctx, "a/b/e", storage.PutOptions{Size: -1})
	w.Abort()
	ents, _ = os.ReadDir(filepath.Join(root, "a", "b"))
	if len(ents) != 1 || ents[0].Name() != "c" {
		t.Fatalf("a/b holds %v, want only c", ents)
	}
	if _, err := tg.Create(ctx, "a/"+local.TempPrefix+"x", storage.PutOptions{Size: -1}); !errors.Is(err, storage.ErrBadKey) {
		t.Errorf("Create of a temporary name: %v, want ErrBadKey", err)
	}
	if err := tg.Remove(ctx, "a/b/c", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("emptied directories kept: %v", err)
	}
	if _, err := os.Lstat(root); err != nil {
		t.Errorf("root removed: %v", err)
	}
}

// TestTargetSyncer: Sync makes NoSync commits durable (syncfs on Linux).
func TestTargetSyncer(t *testing.T) {
	ctx := context.Background()
	tg, err := local.OpenTarget(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	w, _ := tg.Create(ctx, "x", storage.PutOptions{Size: -1, NoSync: true})
	w.Write([]byte("x"))
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var s storage.Syncer = tg
	if err := s.Sync(ctx); err != nil {
		t.Errorf("Sync on %s: %v", runtime.GOOS, err)
	}
}
