package scan_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

// fullStore fails every Apply after the first ok ones with ErrNoSpace, as
// a state on a full disk does.
type fullStore struct {
	store.Store
	ok atomic.Int32
}

func (f *fullStore) Apply(ctx context.Context, b store.Batch) (uint64, uint64, error) {
	if f.ok.Add(-1) < 0 {
		return 0, 0, fmt.Errorf("%w: injected", store.ErrNoSpace)
	}
	return f.Store.Apply(ctx, b)
}

// TestStateFull: when the state cannot be written, the scan stops with the
// store's error (no crash), what was committed is consistent, and the next
// scan converges without duplicate or lost journal records. First for the
// baseline (the first scan), then for a later scan that journals.
func TestStateFull(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	for i := range 50 {
		write(t, root, fmt.Sprintf("d%d/f%02d", i%3, i), strings.Repeat("y", i))
	}
	db := openDB(t, filepath.Join(dir, "state.db"))
	fs := &fullStore{Store: db}
	fs.ok.Store(2)
	s, _ := scan.New(scan.Options{Root: root, Store: fs, BatchSize: 7, Logger: quiet()})
	st, err := s.Scan(ctx)
	if !errors.Is(err, store.ErrNoSpace) {
		t.Fatalf("scan with a full state: %v, want ErrNoSpace", err)
	}
	if !st.Baseline || st.BaselineDone {
		t.Errorf("first scan stats %+v, want an incomplete baseline", st)
	}
	t.Log(err)
	ss, _ := db.Stats(ctx)
	if ss.LastSeq != 0 || ss.Resources != 14 {
		t.Errorf("%d records, %d resources committed, want 0 and 2 baseline batches of 7", ss.LastSeq, ss.Resources)
	}
	if _, ok, _ := store.BaselineTime(ctx, db); ok {
		t.Error("an interrupted baseline is recorded as complete")
	}
	checkInventory(t, db, root, nil, inventoryMissing(t, db, root)...)

	// Space again: the next scan completes the baseline, still without
	// journal records.
	os.Remove(filepath.Join(root, "d0/f00")) // a delete of a committed or uncommitted file
	s, _ = scan.New(scan.Options{Root: root, Store: db, BatchSize: 7, Logger: quiet()})
	if st, err := s.Scan(ctx); err != nil || !st.Baseline || !st.BaselineDone {
		t.Fatalf("second scan: %+v, %v; want the baseline completed", st, err)
	}
	checkInventory(t, db, root, nil)
	if ss, _ := db.Stats(ctx); ss.LastSeq != 0 || ss.Resources != 49 {
		t.Errorf("after the baseline: %+v", ss)
	}
	if _, ok, _ := store.BaselineTime(ctx, db); !ok {
		t.Error("baseline not recorded")
	}

	// After the baseline: 50 new files, the state full after 2 batches.
	for i := range 50 {
		write(t, root, fmt.Sprintf("e%d/g%02d", i%3, i), strings.Repeat("z", i))
	}
	fs.ok.Store(2)
	s, _ = scan.New(scan.Options{Root: root, Store: fs, BatchSize: 7, Logger: quiet()})
	if _, err := s.Scan(ctx); !errors.Is(err, store.ErrNoSpace) {
		t.Fatalf("scan with a full state: %v, want ErrNoSpace", err)
	}
	if ss, _ := db.Stats(ctx); ss.LastSeq != 14 {
		t.Errorf("%d records committed, want 2 batches of 7", ss.LastSeq)
	}
	checkInventory(t, db, root, nil, inventoryMissing(t, db, root)...)
	os.Remove(filepath.Join(root, "e0/g00"))
	s, _ = scan.New(scan.Options{Root: root, Store: db, BatchSize: 7, Logger: quiet()})
	if st, err := s.Scan(ctx); err != nil || st.Baseline {
		t.Fatalf("scan after the baseline: %+v, %v", st, err)
	}
	checkInventory(t, db, root, nil)
	seen := map[string]int{}
	for c, err := range db.Journal(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(c.Path(), "e") {
			t.Errorf("journal record %s of %q, a baseline file", c.Kind, c.Path())
		}
		if c.Kind == "created" {
			seen[c.Path()]++
		}
	}
	for p, n := range seen {
		if n != 1 {
			t.Errorf("%q created %d times", p, n)
		}
	}
	if len(seen) < 49 {
		t.Errorf("%d paths created, want at least 49", len(seen))
	}
	if err := storetest.CheckReplay(ctx, db); err != nil {
		t.Error(err)
	}
}

// inventoryMissing lists the directory's files that the inventory lacks.
func inventoryMissing(t *testing.T, db store.Store, root string) []string {
	var out []string
	for p := range dirState(t, root, nil) {
		if _, err := db.Get(context.Background(), p); errors.Is(err, store.ErrNotFound) {
			out = append(out, p)
		}
	}
	return out
}

func TestScanErrors(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, filepath.Join(t.TempDir(), "state.db"))
	s, _ := scan.New(scan.Options{Root: filepath.Join(t.TempDir(), "missing"), Store: db, Logger: quiet()})
	if _, err := s.Scan(ctx); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing root: %v", err)
	}
	if _, err := scan.New(scan.Options{Root: ".", Store: db, Skip: []string{"[bad"}}); !errors.Is(err, scan.ErrSkipPattern) {
		t.Errorf("bad pattern: %v", err)
	}
	root := t.TempDir()
	for i := range 100 {
		write(t, root, fmt.Sprintf("f%03d", i), "x")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	s, _ = scan.New(scan.Options{Root: root, Store: db, Logger: quiet()})
	if _, err := s.Scan(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled scan: %v", err)
	}
	if err := storetest.CheckReplay(ctx, db); err != nil {
		t.Error(err)
	}
}
