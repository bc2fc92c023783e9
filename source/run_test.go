package source

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder keeps the "updated" log records.
type recorder struct {
	mu      sync.Mutex
	updates []map[string]any
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message != "updated" {
		return nil
	}
	m := map[string]any{}
	rec.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.Any(); return true })
	r.mu.Lock()
	r.updates = append(r.updates, m)
	r.mu.Unlock()
	return nil
}

// TestWatchScansPaths: with Watch, a change scans only the paths its
// events name (the other directories' files are not visited), and a
// removed directory's files are deleted from the journal's view.
func TestWatchScansPaths(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b", "c"} {
		for _, f := range []string{"1", "2", "3", "4"} {
			write(t, dir, d+"/"+f, d+f)
		}
	}
	rec := &recorder{}
	src, err := Open(Config{BaseURL: "http://127.0.0.1/", Sets: []SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(), Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := src.Update(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, RunOptions{Watch: true, Debounce: 50 * time.Millisecond}) }()
	defer func() { cancel(); <-done }()
	time.Sleep(200 * time.Millisecond) // the watches are in place

	inventory := func() string {
		var paths []string
		for r, err := range src.Store("default").Resources(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			paths = append(paths, r.Path+"="+strconv.FormatInt(r.Size, 10))
		}
		return strings.Join(paths, " ")
	}
	// waitFor waits for the inventory and then for the log lines of the
	// updates that made it (logged after the documents are published).
	waitFor := func(want, key string, n int) []map[string]any {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if inventory() != want {
				continue
			}
			rec.mu.Lock()
			sum := 0
			for _, u := range rec.updates {
				sum += int(u[key].(int64))
			}
			if sum >= n {
				defer rec.mu.Unlock()
				u := rec.updates
				rec.updates = nil
				return u
			}
			rec.mu.Unlock()
		}
		t.Fatalf("inventory %s, want %s", inventory(), want)
		return nil
	}

	// Events may be split over several updates on a loaded machine: each
	// must be a path scan that visits no file but the changed ones.
	write(t, dir, "b/2", "changed b/2")
	for _, u := range waitFor("a/1=2 a/2=2 a/3=2 a/4=2 b/1=2 b/2=11 b/3=2 b/4=2 c/1=2 c/2=2 c/3=2 c/4=2", "updated", 1) {
		if u["full"] != false || (u["updated"] != int64(0) && u["files"].(int64) > 1) {
			t.Errorf("after a write: %v", u)
		}
	}

	if err := os.RemoveAll(filepath.Join(dir, "c")); err != nil {
		t.Fatal(err)
	}
	for _, u := range waitFor("a/1=2 a/2=2 a/3=2 a/4=2 b/1=2 b/2=11 b/3=2 b/4=2", "deleted", 4) {
		// (A late update of the write's last event may be logged here.)
		if u["full"] != false || (u["deleted"] != int64(0) && u["files"].(int64) != 0) {
			t.Errorf("after removing a directory: %v", u)
		}
	}
}
