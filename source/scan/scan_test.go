package scan_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

// old is the mtime given to test files, so that their stat fields are
// trusted (not racily clean).
var old = time.Now().Add(-time.Hour).Truncate(time.Second)

func write(t testing.TB, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

func openDB(t testing.TB, path string) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(path, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// logBuf is a concurrency-safe log sink that also echoes to the test log.
type logBuf struct {
	mu  sync.Mutex
	b   bytes.Buffer
	out io.Writer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	return l.out.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// journalSince returns "kind path" for each record with seq > after, sorted.
func journalSince(t testing.TB, db store.Store, after uint64) []string {
	t.Helper()
	var out []string
	for c, err := range db.Journal(context.Background(), after+1) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(c.Kind)+" "+c.Path())
	}
	slices.Sort(out)
	return out
}

// dirState hashes the files the scanner should see: regular, not hidden,
// not matching skip, symlinks not followed.
func dirState(t testing.TB, root string, skip func(rel string) bool) map[string][32]byte {
	t.Helper()
	m := map[string][32]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel := filepath.ToSlash(p[len(root)+1:])
		if strings.HasPrefix(d.Name(), ".") || (skip != nil && skip(rel)) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		m[rel] = [32]byte(h.Sum(nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkInventory compares the store's inventory with the directory and the
// journal's replay with the inventory; except lists paths whose inventory
// record is expected to be stale.
func checkInventory(t testing.TB, db store.Store, root string, skip func(string) bool, except ...string) {
	t.Helper()
	ctx := context.Background()
	want := dirState(t, root, skip)
	got := map[string][32]byte{}
	for r, err := range db.Resources(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		got[r.Path] = r.SHA256
	}
	for p, h := range want {
		if slices.Contains(except, p) {
			continue
		}
		if g, ok := got[p]; !ok {
			t.Errorf("inventory lacks %q", p)
		} else if g != h {
			t.Errorf("inventory has a wrong sha-256 for %q", p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok && !slices.Contains(except, p) {
			t.Errorf("inventory has %q, the directory does not", p)
		}
	}
	if err := storetest.CheckReplay(ctx, db); err != nil {
		t.Error(err)
	}
}

// testHooks are the faults a case injects into the second scan.
type testHooks struct {
	Open      func(name string) (*os.File, error) // opens a file to hash
	AfterRead func(name string)                   // runs after each read of a file being hashed
}

func TestChangeDetection(t *testing.T) {
	root0 := os.Geteuid() == 0
	denied := func(victim string) func(string) (*os.File, error) {
		return func(name string) (*os.File, error) {
			if filepath.Base(name) == victim {
				return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
			}
			return os.Open(name)
		}
	}
	// unreadable makes root/rel unreadable: chmod 000 for ordinary users;
	// root reads anything, so there the scanner's Open is made to fail.
	unreadable := func(t *testing.T, root, rel string, o *testHooks) {
		if root0 {
			o.Open = denied(filepath.Base(rel))
			return
		}
		p := filepath.Join(root, rel)
		if err := os.Chmod(p, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(p, 0o644) })
	}

	for _, tc := range []struct {
		name   string
		setup  map[string]string // files before the first scan
		mutate func(t *testing.T, root string, o *testHooks) (beforeHash func(rel string))
		want   []string // journal records of the second scan, "kind path", sorted
		stale  []string // paths whose inventory record is expected to differ from the directory
		skip   []string
		log    string // a substring the second scan must log
		check  func(t *testing.T, db store.Store, st scan.Stats)
		// maxAlloc bounds the bytes the second scan allocates (0: no bound).
		maxAlloc uint64
	}{
		{
			name:  "create",
			setup: map[string]string{"a": "A"},
			mutate: func(t *testing.T, root string, _ *testHooks) func(string) {
				write(t, root, "dir/b.txt", "B")
				return nil
			},
			want: []string{"created dir/b.txt"},
		},
		{
			name:  "create empty file",
			setup: map[string]string{"a": "A"},
			mutate: func(t *testing.T, root string, _ *testHooks) func(string) {
				write(t, root, "empty", "")
				return nil
			},
			want: []string{"created empty"},
		},
		{
			name:   "update",
			setup:  map[string]string{"a": "A"},
			mutate: func(t *testing.T, root string, _ *testHooks) func(string) { write(t, root, "a", "AA"); return nil },
			want:   []string{"updated a"},
		},
		{
			name:  "update same size different bytes, mtime changed",
			setup: map[string]string{"a": "AAAA"},
			mutate: func(t *testing.T, root string, _ *testHooks) func(string) {
				write(t, root, "a", "BBBB")
				os.Chtimes(filepath.Join(root, "a"), old.Add(time.Second), old.Add(time.Second))
				return nil
			},
			want: []string{"updated a"},
		},
		{
			name:  "delete",
			setup: map[string]string{"a": "A", "d/b": "B"},
			mutate: func(t *testing.T, root string, _ *testHooks) func(string) {
				os.RemoveAll(filepath.Join(root, "d"))
				return nil
			},
			want: []string{"deleted d/b"},
		},
		{
			name:  "rename",
			setup: map[string]string{"a": "A"},
			mutate: func(t *testing.T, root string, _ *testHooks) func(string) {
				os.Rename(filepath.Join(root, "a"), filepath.Join(root, "b"))
				return nil
			},
			want: []string{"created b", "deleted a"},
		},
		{
			name:  "touch without change",
			setup: map[string]string{"a": "A"},
			mutate: func(t *testing.T, root string, _ *testHooks) func(string) {
				os.Chtimes(filepath.Join(root, "a"), old.Add(time.Minute), old.Add(time.Minute))
				return nil
			},
			want: nil,
			check: func(t *testing.T, db store.Store, st scan.Stats) {
				r, _ := db.Get(context.Background(), "a")
				if st.Touched != 1 || !r.ModTime.Equal(old.Add(time.Minute)) {
					t.Errorf("touched %d, inventory mtime %v", st.Touched, r.ModTime)
				}
				if !r.LastMod.Equal(old) {
					t.Errorf("lastmod moved to %v on a touch", r.LastMod)
				}
			},
		},
		{
			name:  "rewritten with the same bytes (new inode)",
			setup: map[string]string{"a": "A"},
			mutate: func(t *testing.T, root string, _ *testHooks) func(string) {
				os.Remove(filepath.Join(root, "a"))
				write(t, root, "tmp", "A")
				os.Rename(filepath.Join(root, "tmp"), filepath.Join(root, "a"))
				return nil
			},
			want: nil,
		},
		{
			name:  "unchanged stat is not read",
			setup: map[string]string{"a": "A", "b": "B"},
			mutate: func(t *testing.T, root string, o *testHooks) func(string) {
				o.Open = func(name string) (*os.File, error) { t.Errorf("read %s", name); return os.Open(name) }
				return nil
			},
			check: func(t *testing.T, db store.Store, st scan.Stats) {
				if st.Unchanged != 2 || st.Hashed != 0 {
					t.Errorf("stats %+v", st)
				}
			},
		},
		{
			name:  "unreadable new file",
			setup: map[string]string{"a": "A"},
			mutate: func(t *testing.T, root string, o *testHooks) func(string) {
				write(t, root, "secret", "S")
				unreadable(t, root, "secret", o)
				return nil
			},
			want:  nil,
			stale: []string{"secret"},
			log:   "cannot read file",
		},
		{
			name:  "unreadable changed file is left as it was, not deleted",
			setup: map[string]string{"a": "A", "secret": "S"},
			mutate: func(t *testing.T, root string, o *testHooks) func(string) {
				write(t, root, "secret", "S2")
				unreadable(t, root, "secret", o)
				return nil
			},
			want:  nil,
			stale: []string{"secret"},
			log:   "cannot read file",
		},
		{
			name:  "unlistable directory is left as it was",
			setup: map[string]string{"a": "A", "locked/x": "X"},
			mutate: func(t *testing.T, root string, o *testHooks) func(string) {
				if root0 {
					t.Skip("root can list any directory; covered for ordinary users")
				}
				p := filepath.Join(root, "locked")
				os.Chmod(p, 0)
				t.Cleanup(func() { os.Chmod(p, 0o755) })
				return nil
			},
			want:  nil,
			stale: []string{"locked/x"},
			log:   "cannot list directory",
		},
		{
			name:  "vanishes before it is read",
			setup: map[string]string{"a": "A", "b": "B"},
			mutate: func(t *testing.T, root string, o *testHooks) func(string) {
				write(t, root, "a", "A2")
				write(t, root, "new", "N")
				return func(rel string) { os.Remove(filepath.Join(root, rel)) }
			},
			want: []string{"deleted a"},
			log:  "vanished",
		},
		{
			name:  "changes once while read: read again",
			setup: map[string]string{"a": "A"},
			mutate: func(t *testing.T, root string, o *testHooks) func(string) {
				write(t, root, "a", "A2")
				var once sync.Once
				return func(rel string) {
					once.Do(func() { os.WriteFile(filepath.Join(root, rel), []byte("A3 final"), 0o644) })
				}
			},
			want: []string{"updated a"},
			check: func(t *testing.T, db store.Store, st scan.Stats) {
				r, _ := db.Get(context.Background(), "a")
				if r.SHA256 != sha256.Sum256([]byte("A3 final")) {
					t.Error("recorded a hash other than the final content's")
				}
			},
		},
		{
			name:  "keeps changing while read: skipped",
			setup: map[string]string{"a": "A"},
			mutate: func(t *testing.T, root string, o *testHooks) func(string) {
				write(t, root, "a", "A2")
				o.Open = os.Open
				o.AfterRead = func(name string) { // a writer appends while we read
					af, _ := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
					af.WriteString("more")
					af.Close()
				}
				return nil
			},
			want:  nil,
			stale: []string{"a"},
			log:   "keeps changing",
		},
		{
			name:  "names needing escaping",
			setup: map[string]string{"a": "A"},
			mutate: func(t *testing.T, root string, _ *testHooks) func(string) {
				for _, n := range []string{"with space", "100%", "x#y", "q?", "café", "bad\xff\xfe", "dir ü/f;g"} {
					write(t, root, n, n)
				}
				return nil
			},
			want: []string{"created 100%", "created bad\xff\xfe", "created café", "created dir ü/f;g", "created q?", "created with space", "created x#y"},
			check: func(t *testing.T, db store.Store, st scan.Stats) {
				for r, err := range db.Resources(context.Background()) {
					if err != nil {
						t.Fatal(err)
					}
					u := scan.ResourceURL("http://example.org/res/", r.Path)
					for _, c := range []byte(u) {
						if c <= ' ' || c >= 0x7f || c == '#' || c == '?' {
							t.Errorf("%q: URL %q has an unescaped byte %q", r.Path, u, c)
						}
					}
					if pu, err := url.Parse(u); err != nil || pu.Path != "/res/"+r.Path {
						t.Errorf("URL %s of %q does not parse back: %v", u, r.Path, err)
					}
					if back, err := scan.UnescapePath(strings.TrimPrefix(u, "http://example.org/res/")); err != nil || back != r.Path {
						t.Errorf("URL %s does not map back to %q: %q, %v", u, r.Path, back, err)
					}
				}
			},
		},
		{
			name:  "hidden files, state dir and skip patterns",
			setup: map[string]string{"a": "A"},
			skip:  []string{"*.tmp", "cache", "logs/old-*"},
			mutate: func(t *testing.T, root string, _ *testHooks) func(string) {
				for _, n := range []string{".hidden", ".git/config", "d/.x", "x.tmp", "d/y.tmp", "cache/z", "d/cache/z", "logs/old-1", "logs/new-1"} {
					write(t, root, n, n)
				}
				return nil
			},
			want: []string{"created logs/new-1"},
		},
		{
			name:  "symlinks not followed",
			setup: map[string]string{"a": "A", "d/b": "B"},
			mutate: func(t *testing.T, root string, _ *testHooks) func(string) {
				os.Symlink("a", filepath.Join(root, "link"))
				os.Symlink("d", filepath.Join(root, "dlink"))
				os.Symlink("/etc", filepath.Join(root, "outside"))
				return nil
			},
			want: nil,
		},
		{
			name:  "file replaced by a symlink",
			setup: map[string]string{"a": "A", "b": "B"},
			mutate: func(t *testing.T, root string, _ *testHooks) func(string) {
				os.Remove(filepath.Join(root, "b"))
				os.Symlink("a", filepath.Join(root, "b"))
				return nil
			},
			want: []string{"deleted b"},
		},
		{
			name:  "large sparse file is streamed",
			setup: map[string]string{"a": "A"},
			mutate: func(t *testing.T, root string, _ *testHooks) func(string) {
				f, err := os.Create(filepath.Join(root, "big.bin"))
				if err != nil {
					t.Fatal(err)
				}
				f.Truncate(300 << 20)
				f.Close()
				os.Chtimes(filepath.Join(root, "big.bin"), old, old)
				return nil
			},
			want:     []string{"created big.bin"},
			maxAlloc: 32 << 20, // the 300 MiB file is never held in memory
			check: func(t *testing.T, db store.Store, st scan.Stats) {
				r, _ := db.Get(context.Background(), "big.bin")
				if r.Size != 300<<20 || r.Type != "application/octet-stream" {
					t.Errorf("big.bin: size %d type %q", r.Size, r.Type)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			root := filepath.Join(dir, "root")
			os.Mkdir(root, 0o755)
			for rel, c := range tc.setup {
				write(t, root, rel, c)
			}
			state := filepath.Join(root, ".state")
			os.Mkdir(state, 0o755)
			db := openDB(t, filepath.Join(state, "state.db"))
			logs := &logBuf{out: t.Output()}
			opt := scan.Options{Root: root, Store: db, Skip: tc.skip, Exclude: []string{state},
				Logger: slog.New(slog.NewTextHandler(logs, nil))}
			s, err := scan.New(opt)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Scan(ctx); err != nil {
				t.Fatal(err)
			}
			// The first scan is the baseline: inventory, no journal.
			st0, _ := db.Stats(ctx)
			if st0.LastSeq != 0 || st0.Resources != len(tc.setup) {
				t.Fatalf("first scan: %d records and %d resources for %d files", st0.LastSeq, st0.Resources, len(tc.setup))
			}
			// The second scan may have hooks installed by mutate.
			var th testHooks
			hook := tc.mutate(t, root, &th)
			s2, _ := scan.New(opt)
			s2.SetBeforeHash(hook)
			if th.Open != nil {
				s2.SetOpen(th.Open, th.AfterRead)
			}
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			st, err := s2.Scan(ctx)
			if err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&m1)
			if a := m1.TotalAlloc - m0.TotalAlloc; tc.maxAlloc > 0 && a > tc.maxAlloc {
				t.Errorf("second scan allocated %d bytes, want at most %d", a, tc.maxAlloc)
			}
			got := journalSince(t, db, st0.LastSeq)
			if !slices.Equal(got, tc.want) {
				t.Errorf("journal %q, want %q (stats %+v)", got, tc.want, st)
			}
			if tc.log != "" && !strings.Contains(logs.String(), tc.log) {
				t.Errorf("no log line containing %q", tc.log)
			}
			if tc.check != nil {
				tc.check(t, db, st)
			}
			skip := func(rel string) bool {
				for _, p := range tc.skip {
					if ok, _ := filepath.Match(p, rel); ok {
						return true
					}
					if ok, _ := filepath.Match(p, filepath.Base(rel)); ok {
						return true
					}
				}
				return false
			}
			if !root0 {
				for _, p := range tc.stale {
					os.Chmod(filepath.Join(root, p), 0o644)
					os.Chmod(filepath.Dir(filepath.Join(root, p)), 0o755)
				}
			}
			checkInventory(t, db, root, skip, tc.stale...)
			// A third scan, without hooks, converges and records nothing
			// more for unchanged files.
			s4, _ := scan.New(opt)
			if _, err := s4.Scan(ctx); err != nil {
				t.Fatal(err)
			}
			checkInventory(t, db, root, skip)
		})
	}
}

// TestBaseline: the first scan puts the collection into the inventory
// without journal records and records the baseline; later changes are
// journaled, never stamped before the baseline even when the clock steps
// back.
func TestBaseline(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	for i := range 20 {
		write(t, root, fmt.Sprintf("d%d/f%02d", i%2, i), strings.Repeat("b", i))
	}
	db := openDB(t, filepath.Join(t.TempDir(), "state.db"))
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	s, _ := scan.New(scan.Options{Root: root, Store: db, BatchSize: 6, Logger: quiet(), Now: func() time.Time { return now }})
	st, err := s.Scan(ctx)
	if err != nil || !st.Baseline || !st.BaselineDone || st.Created != 20 {
		t.Fatalf("first scan: %+v, %v", st, err)
	}
	if ss, _ := db.Stats(ctx); ss.LastSeq != 0 || ss.Resources != 20 {
		t.Errorf("after the first scan: %+v, want 20 resources and no journal", ss)
	}
	if bt, ok, err := store.BaselineTime(ctx, db); !ok || err != nil || !bt.Equal(t0) {
		t.Errorf("baseline %v %v %v, want %v", bt, ok, err, t0)
	}
	// The clock steps back an hour; one create, one update, one delete.
	now = t0.Add(-time.Hour)
	write(t, root, "new", "n")
	write(t, root, "d0/f00", "changed")
	os.Remove(filepath.Join(root, "d1/f01"))
	st, err = s.Scan(ctx)
	if err != nil || st.Baseline || st.BaselineDone {
		t.Fatalf("second scan: %+v, %v", st, err)
	}
	if got, want := journalSince(t, db, 0), []string{"deleted d1/f01", "updated d0/f00", "created new"}; !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("journal %q, want %q", got, want)
	}
	for c, err := range db.Journal(ctx, 0) {
		if err != nil || c.Time.Before(t0) {
			t.Errorf("record %d at %v (%v), before the baseline %v", c.Seq, c.Time, err, t0)
		}
	}
	if err := storetest.CheckReplay(ctx, db); err != nil {
		t.Error(err)
	}
}
