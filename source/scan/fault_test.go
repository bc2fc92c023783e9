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

	"github.com/resourcesync-go/resourcesync/internal/store"
	"github.com/resourcesync-go/resourcesync/internal/store/storetest"
	"github.com/resourcesync-go/resourcesync/source/scan"
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
// scan converges without duplicate or lost journal records.
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
	_, err := s.Scan(ctx)
	if !errors.Is(err, store.ErrNoSpace) {
		t.Fatalf("scan with a full state: %v, want ErrNoSpace", err)
	}
	t.Log(err)
	st, _ := db.Stats(ctx)
	if st.LastSeq != 14 {
		t.Errorf("%d records committed, want 2 batches of 7", st.LastSeq)
	}
	checkInventory(t, db, root, nil, inventoryMissing(t, db, root)...)

	// Space again: the next scan records exactly the rest.
	os.Remove(filepath.Join(root, "d0/f00")) // and a delete of a committed or uncommitted file
	s, _ = scan.New(scan.Options{Root: root, Store: db, BatchSize: 7, Logger: quiet()})
	if _, err := s.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	checkInventory(t, db, root, nil)
	seen := map[string]int{}
	for c, err := range db.Journal(ctx, 0) {
		if err != nil {
			t.Fatal(err)
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
