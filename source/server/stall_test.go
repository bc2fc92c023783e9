package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store/pgstore"
)

// TestStalledStore: every resource request looks its path up in the
// store. When PostgreSQL cannot answer (a table lock held by a
// maintenance job, a failover in progress), a request must end with a 503
// and Retry-After within a few seconds, not wait as long as the stall
// while requests pile up on a pool of 8 connections.
func TestStalledStore(t *testing.T) {
	pgtest.Skip(t)
	old := lookupTimeout
	lookupTimeout = time.Second
	t.Cleanup(func() { lookupTimeout = old })
	ctx := context.Background()
	url := pgtest.Database(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	st, err := pgstore.Open(ctx, url, "stall", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sc, err := scan.New(scan.Options{Root: dir, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	h := &Handler{Docs: t.TempDir(), Mount: "/", Sets: []Set{{Prefix: "/", Dir: dir, Store: st}}, Logger: slog.New(slog.DiscardHandler)}
	get := func() (int, time.Duration) {
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/a.txt", nil))
		return rec.Code, time.Since(start)
	}
	if code, _ := get(); code != http.StatusOK {
		t.Fatalf("GET before the stall: %d", code)
	}
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE rs_inventory IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	release := time.AfterFunc(8*time.Second, func() { tx.Rollback(ctx) })
	defer release.Stop()
	code, took := get()
	if code != http.StatusServiceUnavailable || took > 4*time.Second {
		t.Errorf("GET during the stall: %d after %v; want 503 within seconds", code, took.Round(time.Millisecond))
	}
	tx.Rollback(ctx)
	if code, _ := get(); code != http.StatusOK {
		t.Errorf("GET after the stall: %d", code)
	}
}
