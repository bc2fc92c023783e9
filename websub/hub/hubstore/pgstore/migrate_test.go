package pgstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
)

// TestMigrateConcurrently opens one fresh database from several nodes at
// once: every Open succeeds and each step is recorded exactly once.
func TestMigrateConcurrently(t *testing.T) {
	url := pgtest.Database(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 8
	var wg sync.WaitGroup
	stores := make([]*Store, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = Open(ctx, url, nil)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	var rows, maxv int
	if err := stores[0].pool.QueryRow(ctx, `SELECT count(*), max(version) FROM hub_schema`).Scan(&rows, &maxv); err != nil {
		t.Fatal(err)
	}
	if rows != len(migrations) || maxv != len(migrations) {
		t.Fatalf("hub_schema: %d rows, version %d; want %d", rows, maxv, len(migrations))
	}
	// Opening again is a no-op.
	s, err := Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// TestMigrateRefusesNewer: a schema from a newer program is not touched.
func TestMigrateRefusesNewer(t *testing.T) {
	url := pgtest.Database(t)
	ctx := context.Background()
	s, err := Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `INSERT INTO hub_schema (version) VALUES ($1)`, len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, url, nil)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of a newer schema: %v, want ErrSchemaTooNew", err)
	}
	t.Log(err)
}
