package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

// TestScan runs the scanner on pgstore and on bolt over the same tree: a
// baseline, an unchanged rescan, then a rescan after changes; both stores
// end with the same inventory and journal, which replays.
func TestScan(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	root := t.TempDir()
	n := 3000
	if testing.Short() {
		n = 500
	}
	for i := range n {
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%17), fmt.Sprintf("f%05d.txt", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(fmt.Sprint("content ", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pg := open(t, pgtest.Database(t), "scan")
	bdb, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	stores := []store.Store{pg, bdb}
	scanners := make([]*scan.Scanner, len(stores))
	for i, s := range stores {
		if scanners[i], err = scan.New(scan.Options{Root: root, Store: s, BatchSize: 1000}); err != nil {
			t.Fatal(err)
		}
	}
	scanAll := func(step string) []scan.Stats {
		t.Helper()
		var out []scan.Stats
		for i, sc := range scanners {
			start := time.Now()
			st, err := sc.Scan(ctx)
			if err != nil {
				t.Fatalf("%s on store %d: %v", step, i, err)
			}
			t.Logf("%s on %T: %v: %+v", step, stores[i], time.Since(start).Round(time.Millisecond), st)
			out = append(out, st)
		}
		return out
	}
	st := scanAll("baseline")
	if !st[0].BaselineDone || st[0].Created != n {
		t.Fatalf("baseline on pgstore: %+v", st[0])
	}
	st = scanAll("unchanged rescan")
	// Files written within scan.RacyWindow of the baseline are hashed
	// again (Touched: same bytes), not trusted by their mtime (Unchanged).
	if st[0].Unchanged+st[0].Touched != n || st[0].Created+st[0].Updated+st[0].Deleted != 0 {
		t.Errorf("unchanged rescan on pgstore: %+v", st[0])
	}
	time.Sleep(scan.RacyWindow) // let the files' mtimes be trusted
	for i := 0; i < n; i += 7 {
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%17), fmt.Sprintf("f%05d.txt", i))
		switch i % 3 {
		case 0:
			os.Remove(p)
		case 1:
			os.WriteFile(p, []byte("changed"), 0o644)
		case 2:
			os.WriteFile(p+".new", []byte("new"), 0o644)
		}
	}
	st = scanAll("rescan after changes")
	if st[0].Created != st[1].Created || st[0].Updated != st[1].Updated || st[0].Deleted != st[1].Deleted || st[0].Deleted == 0 {
		t.Errorf("pgstore %+v, bolt %+v", st[0], st[1])
	}
	for _, s := range stores {
		if err := storetest.CheckReplay(ctx, s); err != nil {
			t.Errorf("%T: %v", s, err)
		}
	}
	var a, b []store.Resource
	for r, err := range pg.Resources(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		a = append(a, r)
	}
	for r, err := range bdb.Resources(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, r)
	}
	if len(a) != len(b) {
		t.Fatalf("inventories: %d vs %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Path != b[i].Path || a[i].SHA256 != b[i].SHA256 || a[i].Size != b[i].Size || a[i].Type != b[i].Type { // mtimes: racily clean files differ by timing
			t.Fatalf("record %d: %+v vs %+v", i, a[i], b[i])
		}
	}
	sa, _ := pg.Stats(ctx)
	sb, _ := bdb.Stats(ctx)
	if sa.LastSeq != sb.LastSeq || sa.Resources != sb.Resources {
		t.Errorf("stats %+v vs %+v", sa, sb)
	}
}
