package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/resourcesync-go/resourcesync/storage"
	"github.com/resourcesync-go/resourcesync/storage/local"
	"github.com/resourcesync-go/resourcesync/storage/storagetest"
)

type dirFiller struct{ dir string }

// Put writes a temporary file and renames it over the key, as an editor
// does: a new inode, so the Version changes with the bytes even within
// one mtime tick.
func (f dirFiller) Put(t *testing.T, key string, data []byte) {
	t.Helper()
	p := filepath.Join(f.dir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".put-*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmp.Write(data); err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	if err := os.Rename(tmp.Name(), p); err != nil {
		t.Fatal(err)
	}
}

func (f dirFiller) Delete(t *testing.T, key string) {
	t.Helper()
	if err := os.Remove(filepath.Join(f.dir, filepath.FromSlash(key))); err != nil {
		t.Fatal(err)
	}
}

func TestContentSuite(t *testing.T) {
	storagetest.ContentSuite(t, func(t *testing.T) (storage.Content, storagetest.Filler) {
		dir := t.TempDir()
		c, err := storage.OpenContent(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		return c, dirFiller{dir}
	})
}

// A symbolic link is never followed: not listed, not stat'ed, not opened,
// whether it is the file or a directory on the way.
func TestContentNoSymlink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	ctx := context.Background()
	dir, outside := t.TempDir(), t.TempDir()
	dirFiller{outside}.Put(t, "secret", []byte("s"))
	dirFiller{dir}.Put(t, "ok", []byte("ok"))
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "file-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "dir-link")); err != nil {
		t.Fatal(err)
	}
	c, err := local.NewContent(dir)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := c.List(ctx, "", func(inf storage.Info) error { keys = append(keys, inf.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "ok" {
		t.Fatalf("List: %q, want [ok]", keys)
	}
	for _, k := range []string{"file-link", "dir-link/secret"} {
		if _, err := c.Stat(ctx, k); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("Stat %s: %v, want ErrNotExist", k, err)
		}
		if _, _, err := c.Open(ctx, k, 0, -1); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("Open %s: %v, want ErrNotExist", k, err)
		}
	}
}

func TestOpenFileURL(t *testing.T) {
	dir := t.TempDir()
	dirFiller{dir}.Put(t, "x", []byte("x"))
	c, err := storage.OpenContent(context.Background(), "file://"+filepath.ToSlash(dir))
	if runtime.GOOS == "windows" {
		c, err = storage.OpenContent(context.Background(), "file:///"+filepath.ToSlash(dir))
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stat(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
}
