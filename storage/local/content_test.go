package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

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

// The Content reports changes as they happen: a new file by its key, a
// file in a new directory by the directory's prefix or its key.
func TestContentWatch(t *testing.T) {
	dir := t.TempDir()
	c, err := local.NewContent(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 100)
	done := make(chan error, 1)
	go func() {
		done <- c.Watch(ctx, func(keys []string) {
			for _, k := range keys {
				got <- k
			}
		})
	}()
	wait := func(want ...string) {
		t.Helper()
		timeout := time.After(5 * time.Second)
		for {
			select {
			case k := <-got:
				if slices.Contains(want, k) {
					return
				}
			case <-timeout:
				t.Fatalf("no event naming any of %q", want)
			}
		}
	}
	// The watch is in place once an event comes back: retry the first
	// write until one does.
	for i := 0; ; i++ {
		dirFiller{dir}.Put(t, "x.txt", []byte{byte(i)})
		select {
		case k := <-got:
			if k == "x.txt" {
				goto ready
			}
		case <-time.After(100 * time.Millisecond):
		}
		if i == 50 {
			t.Fatal("no event for x.txt")
		}
	}
ready:
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	wait("d/")
	dirFiller{dir}.Put(t, "d/y", []byte("y"))
	wait("d/y")
	os.Remove(filepath.Join(dir, "x.txt"))
	wait("x.txt")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestOpenFileOpaque: "file:PATH" names the directory PATH, as
// storage.LocalPath and the package documentation of storage say, for
// the Content and the Target alike; not a directory named "file:PATH".
func TestOpenFileOpaque(t *testing.T) {
	dir := t.TempDir()
	dirFiller{dir}.Put(t, "x", []byte("x"))
	ctx := context.Background()
	c, err := storage.OpenContent(ctx, "file:"+dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stat(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	tg, err := storage.OpenTarget(ctx, "file:"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if _, err := tg.Stat(ctx, "x"); err != nil {
		t.Errorf("Target of file:%s: %v (at %s)", dir, err, tg.Location())
	}
}
