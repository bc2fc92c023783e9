package source

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source/store"
)

// watched opens a Source over dir, scans it, and runs it with opt; it
// returns a lookup of a path's inventory record.
func watched(t *testing.T, dir string, opt RunOptions) func(rel string) (store.Resource, bool) {
	t.Helper()
	src, err := Open(Config{BaseURL: "http://127.0.0.1/", Sets: []SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := src.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if opt.Watcher == nil {
		w, err := src.Watch()
		if err != nil {
			t.Fatal(err)
		}
		opt.Watcher = w
	}
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, opt) }()
	t.Cleanup(func() { cancel(); <-done; opt.Watcher.Close(); src.Close() })
	return func(rel string) (store.Resource, bool) {
		r, err := src.Store("default").Get(ctx, rel)
		if errors.Is(err, store.ErrNotFound) {
			return r, false
		}
		if err != nil {
			t.Fatal(err)
		}
		return r, true
	}
}

// eventually waits for cond; the deadline is a liveness bound (a change
// that is never scanned), not a latency one.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %s", what)
		}
	}
}

// TestWatchScansCompleteFileAtOnce: on Linux a change is scanned as soon
// as the file is complete - closed after writing (IN_CLOSE_WRITE), moved
// in, linked, removed, moved away, or a new directory - without waiting
// for a quiet period: with a Debounce and MaxDelay of an hour each is
// still journaled (on a watch that waits for quiet, none would be).
func TestWatchScansCompleteFileAtOnce(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "keep", "keep")
	write(t, dir, "gone", "gone")
	write(t, dir, "away", "away")
	write(t, dir, "linked", "linked")
	get := watched(t, dir, RunOptions{Debounce: time.Hour, MaxDelay: time.Hour})
	time.Sleep(50 * time.Millisecond)
	aside := t.TempDir()
	for _, c := range []struct {
		name   string
		change func()
		rel    string
		want   string // "" for gone
	}{
		{"written in place and closed", func() { write(t, dir, "new", "new") }, "new", "new"},
		{"rewritten in place", func() { write(t, dir, "keep", "keep, changed") }, "keep", "keep, changed"},
		{"moved in", func() {
			write(t, aside, "m", "moved in")
			if err := os.Rename(filepath.Join(aside, "m"), filepath.Join(dir, "moved")); err != nil {
				t.Fatal(err)
			}
		}, "moved", "moved in"},
		{"hard link", func() {
			if err := os.Link(filepath.Join(dir, "linked"), filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
		}, "link", "linked"},
		{"removed", func() { os.Remove(filepath.Join(dir, "gone")) }, "gone", ""},
		{"moved away", func() { os.Rename(filepath.Join(dir, "away"), filepath.Join(aside, "away")) }, "away", ""},
		{"new directory", func() { write(t, dir, "d/e/f", "deep") }, "d/e/f", "deep"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.change()
			eventually(t, c.rel+" journaled", func() bool {
				r, ok := get(c.rel)
				if c.want == "" {
					return !ok
				}
				return ok && r.SHA256 == sha256.Sum256([]byte(c.want))
			})
		})
	}
}

// TestWatchHoldsOpenFile: a file still open for writing is not scanned,
// however long its writer pauses (here far beyond Debounce), while other
// changes are; nor is it read by a scan of its directory (its siblings
// are many: see TestReadyPaths): once it is closed, all are journaled,
// it with the digest of the complete file.
func TestWatchHoldsOpenFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "slow/old", "old")
	write(t, dir, "other/old", "old")
	get := watched(t, dir, RunOptions{Debounce: time.Millisecond, MaxDelay: time.Hour})
	time.Sleep(50 * time.Millisecond)

	f, err := os.Create(filepath.Join(dir, "slow", "big"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("first half, "); err != nil {
		t.Fatal(err)
	}
	// Siblings enough that ScanPaths would read slow/ whole.
	for i := range 80 {
		write(t, dir, fmt.Sprintf("slow/s%02d", i), "sibling")
	}
	time.Sleep(100 * time.Millisecond) // 100 × Debounce
	write(t, dir, "other/new", "new")
	eventually(t, "other/new journaled", func() bool { _, ok := get("other/new"); return ok })
	time.Sleep(20 * time.Millisecond) // anything of the same update
	if r, ok := get("slow/big"); ok {
		t.Fatalf("a file open for writing was journaled (%d bytes)", r.Size)
	}
	if _, err := f.WriteString("second half"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "slow/big journaled complete", func() bool {
		r, ok := get("slow/big")
		return ok && r.SHA256 == sha256.Sum256([]byte("first half, second half"))
	})
	for i := range 80 {
		if _, ok := get(fmt.Sprintf("slow/s%02d", i)); !ok {
			t.Fatalf("slow/s%02d not journaled", i)
		}
	}
}

// TestWatchOpenFileMaxDelay: a file left open for writing is scanned as
// it is once MaxDelay has passed since it was first written (a log file
// appended to forever is still published).
func TestWatchOpenFileMaxDelay(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a", "a")
	get := watched(t, dir, RunOptions{Debounce: time.Millisecond, MaxDelay: 100 * time.Millisecond})
	time.Sleep(50 * time.Millisecond)
	f, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("line 1\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the open file journaled after MaxDelay", func() bool {
		r, ok := get("log")
		return ok && r.Size == int64(len("line 1\n"))
	})
}
