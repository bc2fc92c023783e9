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
	"github.com/resourcesync-go/resourcesync/source/store/pgstore"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

// TestBaselineInterrupted: a baseline scan cut off at any moment (its
// context ended in the middle of a COPY batch or between batches: the
// server rolls back what a dying connection had not committed, as after
// kill -9) leaves whole batches only: the head row's count is the
// inventory's, the journal stays empty, and the next scan completes.
func TestBaselineInterrupted(t *testing.T) {
	pgtest.Skip(t)
	root := t.TempDir()
	const n = 3000
	for i := range n {
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%10), fmt.Sprintf("f%05d", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprint(i)), 0o644)
	}
	url := pgtest.Database(t)
	for i, cut := range []time.Duration{5 * time.Millisecond, 15 * time.Millisecond, 25 * time.Millisecond, 40 * time.Millisecond} {
		st := open(t, url, fmt.Sprint("cut", i))
		sc, err := scan.New(scan.Options{Root: root, Store: st, BatchSize: 500})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), cut)
		_, err = sc.Scan(ctx)
		cancel()
		t.Logf("cut after %v: %v", cut, err)
		bg := context.Background()
		// A COMMIT the cut abandoned may still complete on the server
		// after the client returned: wait until no other statement runs,
		// then read the head and the inventory in one statement (one
		// snapshot). Two separate reads saw 0 rows, then a head of 500
		// (the CI flake).
		waitQuiet(t, st)
		var rows, head, lastSeq int64
		if err := st.Pool().QueryRow(bg, `SELECT (SELECT count(*) FROM rs_inventory i WHERE i.set_id = s.id), s.resources, s.last_seq FROM rs_sets s WHERE s.name = $1`, fmt.Sprint("cut", i)).Scan(&rows, &head, &lastSeq); err != nil {
			t.Fatal(err)
		}
		if head != rows || rows%500 != 0 && rows != n || lastSeq != 0 {
			t.Errorf("cut after %v: head says %d resources, inventory has %d rows, last seq %d", cut, head, rows, lastSeq)
		}
		if _, err := sc.Scan(bg); err != nil {
			t.Fatalf("scan after the cut: %v", err)
		}
		if s, _ := st.Stats(bg); s.Resources != n || s.LastSeq != 0 {
			t.Errorf("after the next scan: %d resources, last seq %d; want %d, 0", s.Resources, s.LastSeq, n)
		}
		if err := storetest.CheckReplay(bg, st); err != nil {
			t.Error(err)
		}
	}
}

// waitQuiet waits (10 s at most) until no other session of the database
// runs a statement.
func waitQuiet(t *testing.T, st *pgstore.Store) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		var active int
		if err := st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND state <> 'idle' AND pid <> pg_backend_pid()`).Scan(&active); err != nil {
			t.Fatal(err)
		}
		if active == 0 {
			return
		}
	}
	t.Fatal("statements still running 10 s after the cut")
}
