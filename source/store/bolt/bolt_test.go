package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), &bolt.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}

func TestPersistence(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := storetest.Res("x\xff", "content")
	if _, _, err := db.Apply(ctx, store.Batch{
		Changes: []store.Change{{Kind: rs.Created, Time: storetest.T0, Resource: r}},
		Meta:    map[string][]byte{"boundary": []byte("7")},
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.Get(ctx, "x\xff")
	r.Changed = storetest.T0
	if err != nil || !storetest.Equal(got, r) {
		t.Errorf("after reopen %+v, %v", got, err)
	}
	if v, _ := db.GetMeta(ctx, "boundary"); string(v) != "7" {
		t.Errorf("meta after reopen %q", v)
	}
	if st, _ := db.Stats(ctx); st.Resources != 1 || st.LastSeq != 1 {
		t.Errorf("stats after reopen %+v", st)
	}
}

func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	_, err = bolt.Open(path, &bolt.Options{LockTimeout: 200 * time.Millisecond})
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("lock timeout took %v", d)
	}
	t.Log(err)
}

func TestCorrupt(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string][]byte{
		"text":      []byte(strings.Repeat("not a database\n", 1000)),
		"truncated": nil, // filled below
		"zeros":     make([]byte, 64<<10),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".db")
			if name == "truncated" {
				db, err := bolt.Open(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				db.Close()
				if err := os.Truncate(path, 100); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := bolt.Open(path, &bolt.Options{LockTimeout: 100 * time.Millisecond})
			if err == nil {
				db.Close()
				t.Fatal("Open of a corrupt file succeeded")
			}
			if !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("Open: %v, want ErrCorrupt", err)
			}
			t.Log(err)
		})
	}
}

// TestDiskFull mounts a 1 MiB tmpfs (root only; skipped elsewhere) and
// fills the state until a commit fails: the error is ErrNoSpace, and the
// state stays readable and consistent with everything committed before.
func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount tmpfs: %v %s", err, out)
	}
	defer exec.Command("umount", dir).Run()
	ctx := context.Background()
	path := filepath.Join(dir, "state.db")
	db, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var full error
	committed := 0
	for i := 0; i < 10000 && full == nil; i++ {
		var cs []store.Change
		for k := range 100 {
			cs = append(cs, store.Change{Kind: rs.Created, Time: storetest.T0,
				Resource: storetest.Res(fmt.Sprintf("dir/%06d-%03d-%s", i, k, strings.Repeat("p", 100)), "x")})
		}
		if _, _, err := db.Apply(ctx, store.Batch{Changes: cs}); err != nil {
			full = err
		} else {
			committed += len(cs)
		}
	}
	if !errors.Is(full, store.ErrNoSpace) {
		t.Fatalf("filling the disk: %v, want ErrNoSpace", full)
	}
	t.Logf("after %d records: %v", committed, full)
	st, err := db.Stats(ctx)
	if err != nil || st.Resources != committed || st.LastSeq != uint64(committed) {
		t.Errorf("after disk full: Stats %+v, %v; want %d", st, err, committed)
	}
	if err := storetest.CheckReplay(ctx, db); err != nil {
		t.Error(err)
	}
	db.Close()
	db2, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatalf("reopen after disk full: %v", err)
	}
	defer db2.Close()
	if err := storetest.CheckReplay(ctx, db2); err != nil {
		t.Error(err)
	}
}

func TestOpenMissingDir(t *testing.T) {
	_, err := bolt.Open(filepath.Join(t.TempDir(), "no", "such", "state.db"), nil)
	if !errors.Is(err, os.ErrNotExist) || errors.Is(err, store.ErrCorrupt) {
		t.Errorf("Open in a missing directory: %v, want a not-exist error", err)
	}
}

// BenchmarkApply commits batches of 10,000 created resources (one journal
// record and one inventory record each), as a first scan does.
func BenchmarkApply(b *testing.B) {
	ctx := context.Background()
	db, err := bolt.Open(filepath.Join(b.TempDir(), "state.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const batch = 10000
	n := 0
	for b.Loop() {
		cs := make([]store.Change, batch)
		for i := range cs {
			cs[i] = store.Change{Kind: rs.Created, Time: storetest.T0,
				Resource: storetest.Res(fmt.Sprintf("d%03d/f%08d.dat", n/1000, n), "x")}
			n++
		}
		if _, _, err := db.Apply(ctx, store.Batch{Changes: cs}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "changes/s")
}
