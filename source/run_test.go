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

	"github.com/resourcesync-go/resourcesync/source/scan"
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

// TestWatchBeforeFirstUpdate: a watch made with Source.Watch before the
// first Update sees a change made after that Update and before Run starts
// (serve prints "serving" between the two); no rescan interval covers it.
func TestWatchBeforeFirstUpdate(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a/1", "one")
	src, err := Open(Config{BaseURL: "http://127.0.0.1/", Sets: []SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	w, err := src.Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := src.Update(ctx); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "a/1", "one, changed before Run")
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, RunOptions{Watcher: w, Debounce: 20 * time.Millisecond}) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		r, err := src.Store("default").Get(ctx, "a/1")
		if err != nil {
			t.Fatal(err)
		}
		if r.Size == int64(len("one, changed before Run")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the change made before Run was not recorded (size %d)", r.Size)
		}
	}
}

// TestWatchFsnotifyDebounce: the portable watch (fsnotify: macOS,
// Windows, the BSDs), which reports no close of a written file, scans
// after Debounce of quiet.
func TestWatchFsnotifyDebounce(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a", "a")
	b, err := newFsnotifyBackend()
	if err != nil {
		t.Fatal(err)
	}
	src, err := Open(Config{BaseURL: "http://127.0.0.1/", Sets: []SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	src.watchTree(b, dir)
	w := &Watcher{b: b}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := src.Update(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, RunOptions{Watcher: w, Debounce: 10 * time.Millisecond}) }()
	defer func() { cancel(); <-done }()
	write(t, dir, "a", "a, changed")
	write(t, dir, "b", "b")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		a, errA := src.Store("default").Get(ctx, "a")
		_, errB := src.Store("default").Get(ctx, "b")
		if errA == nil && errB == nil && a.Size == int64(len("a, changed")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("changes not journaled: %v %v %d", errA, errB, a.Size)
		}
	}
}

// TestReadyPaths: which pending paths Run scans while files are open for
// writing: never the open ones, nor a path whose scan would read one (an
// ancestor directory, or more than scan.Coalesce paths of its directory,
// which ScanPaths reads whole).
func TestReadyPaths(t *testing.T) {
	j := filepath.Join
	many := func(dir string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, j(dir, "f"+strconv.Itoa(i)))
		}
		return out
	}
	for _, c := range []struct {
		name    string
		pending []string
		open    []string
		want    int // how many are ready
	}{
		{"nothing open", many("/r/d", 100), nil, 100},
		{"the open file waits", []string{"/r/d/a", "/r/d/b"}, []string{"/r/d/a"}, 1},
		{"few siblings of an open file", append(many("/r/d", scan.Coalesce), "/r/d/open"), []string{"/r/d/open"}, scan.Coalesce},
		{"many siblings of an open file wait", append(many("/r/d", scan.Coalesce+1), "/r/d/open"), []string{"/r/d/open"}, 0},
		{"many files of another directory", append(many("/r/e", scan.Coalesce+1), "/r/d/open"), []string{"/r/d/open"}, scan.Coalesce + 1},
		{"a directory holding an open file waits", []string{"/r/d", "/r/d/x/open", "/r/e"}, []string{"/r/d/x/open"}, 1},
		{"the root waits", []string{"/r", "/r/d/open"}, []string{"/r/d/open"}, 0},
		{"a sibling directory with a common prefix", []string{"/r/d", "/r/dd/open"}, []string{"/r/dd/open"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			pending := map[string]bool{}
			for _, p := range c.pending {
				pending[filepath.FromSlash(p)] = true
			}
			open := map[string]time.Time{}
			for _, p := range c.open {
				open[filepath.FromSlash(p)] = time.Now()
			}
			ready := (&Source{}).readyPaths(pending, open)
			if len(ready) != c.want {
				t.Fatalf("%d ready, want %d: %v", len(ready), c.want, ready)
			}
			for _, p := range ready {
				if _, ok := open[p]; ok {
					t.Fatalf("open %s is ready", p)
				}
			}
		})
	}
}
