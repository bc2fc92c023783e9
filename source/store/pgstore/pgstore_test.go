package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/pgtest"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/pgstore"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

func open(t testing.TB, url, set string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), url, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	pgtest.Skip(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, pgtest.Database(t), "")
	})
}

func TestShared(t *testing.T) {
	pgtest.Skip(t)
	storetest.RunShared(t, func(t *testing.T) (a, b store.Shared) {
		u := pgtest.Database(t)
		return open(t, u, "s"), open(t, u, "s")
	})
}

// TestSets: one database holds independent sets.
func TestSets(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	u := pgtest.Database(t)
	a, b := open(t, u, "a"), open(t, u, "b")
	if _, _, err := a.Apply(ctx, store.Batch{Changes: []store.Change{{Kind: rs.Created, Time: storetest.T0, Resource: storetest.Res("x", "X")}},
		Meta: map[string][]byte{"m": []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("set b sees set a's resource: %v", err)
	}
	if _, err := b.GetMeta(ctx, "m"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("set b sees set a's meta: %v", err)
	}
	if st, _ := b.Stats(ctx); st != (store.Stats{}) {
		t.Errorf("set b stats %+v", st)
	}
	// b may create the same path: the sets' inventories are apart.
	if _, _, err := b.Apply(ctx, store.Batch{Changes: []store.Change{{Kind: rs.Created, Time: storetest.T0, Resource: storetest.Res("x", "Y")}}}); err != nil {
		t.Fatal(err)
	}
	if st, _ := a.Stats(ctx); st.LastSeq != 1 || st.Resources != 1 {
		t.Errorf("set a stats %+v", st)
	}
	// Reopen: the state is durable and the set found again.
	a.Close()
	a = open(t, u, "a")
	if r, err := a.Get(ctx, "x"); err != nil || r.MD5 != storetest.Res("x", "X").MD5 {
		t.Errorf("after reopen: %+v, %v", r, err)
	}
	if err := storetest.CheckReplay(ctx, a); err != nil {
		t.Error(err)
	}
}

// TestConcurrentOpen: processes starting at once on a fresh database all
// succeed and the schema is migrated once.
func TestConcurrentOpen(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	u := pgtest.Database(t)
	var wg sync.WaitGroup
	stores := make([]*pgstore.Store, 8)
	errs := make([]error, 8)
	for i := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = pgstore.Open(ctx, u, "same", nil)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	var versions, sets int
	var maxV int
	if err := stores[0].Pool().QueryRow(ctx, `SELECT count(*), max(version) FROM rs_schema_migrations`).Scan(&versions, &maxV); err != nil {
		t.Fatal(err)
	}
	if versions != pgstore.SchemaVersion || maxV != pgstore.SchemaVersion {
		t.Errorf("rs_schema_migrations: %d rows, max %d; want %d", versions, maxV, pgstore.SchemaVersion)
	}
	if err := stores[0].Pool().QueryRow(ctx, `SELECT count(*) FROM rs_sets`).Scan(&sets); err != nil {
		t.Fatal(err)
	}
	if sets != 1 {
		t.Errorf("%d sets, want 1", sets)
	}
	// All of them work on the one set.
	for i, s := range stores {
		if err := s.PutMeta(ctx, "k", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := stores[0].GetMeta(ctx, "k"); err != nil || v[0] != 7 {
		t.Errorf("meta %v, %v", v, err)
	}
}

func TestSchemaNewer(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	u := pgtest.Database(t)
	s := open(t, u, "")
	if _, err := s.Pool().Exec(ctx, `INSERT INTO rs_schema_migrations (version) VALUES ($1)`, pgstore.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err := pgstore.Open(ctx, u, "", nil)
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open of a newer schema: %v, want ErrCorrupt saying newer", err)
	}
	t.Log(err)
}

func TestBadURL(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ url, host string }{
		{"postgres://user:s3cretpw@127.0.0.1:1/db?connect_timeout=2", "127.0.0.1:1"},
		{"postgres://user:s3cretpw@127.0.0.1:notaport/db", "127.0.0.1"},
		{"host=127.0.0.1 port=1 user=u password=s3cretpw dbname=db connect_timeout=2", "127.0.0.1"},
		{"postgres://user:s3cretpw@127.0.0.1:1/db?sslmode=bogus", "127.0.0.1"},
	} {
		_, err := pgstore.Open(ctx, tc.url, "", nil)
		if err == nil {
			t.Fatalf("Open(%q) succeeded", tc.url)
		}
		if msg := err.Error(); strings.Contains(msg, "s3cretpw") || !strings.Contains(msg, tc.host) {
			t.Errorf("Open(%q): %q: want the host %s named and no password", tc.url, msg, tc.host)
		}
		t.Log(err)
	}
}
