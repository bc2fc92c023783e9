package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
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

// TestLargeMixedBatch: a batch large enough for COPY that also updates,
// deletes and touches (so the paths are looked up), and one that creates
// a path that exists among a thousand new ones (refused by the primary
// key during COPY: nothing written).
func TestLargeMixedBatch(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	s := open(t, pgtest.Database(t), "")
	var cs []store.Change
	for i := range 1000 {
		cs = append(cs, store.Change{Kind: rs.Created, Time: storetest.T0, Resource: storetest.Res(path(i), "v1")})
	}
	if _, _, err := s.Apply(ctx, store.Batch{Changes: cs}); err != nil {
		t.Fatal(err)
	}
	cs = cs[:0]
	var touch []store.Resource
	for i := range 1000 {
		t1 := storetest.T0.Add(time.Second)
		switch i % 4 {
		case 0:
			cs = append(cs, store.Change{Kind: rs.Updated, Time: t1, Resource: storetest.Res(path(i), "v2")})
		case 1:
			cs = append(cs, store.Change{Kind: rs.Deleted, Time: t1, Resource: storetest.Res(path(i), "v1")})
		case 2:
			r, err := s.Get(ctx, path(i))
			if err != nil {
				t.Fatal(err)
			}
			r.Inode = 7
			touch = append(touch, r)
		}
		cs = append(cs, store.Change{Kind: rs.Created, Time: t1, Resource: storetest.Res(path(i+1000), "new")})
	}
	// deleted then created again in the same batch: an update in the end
	cs = append(cs, store.Change{Kind: rs.Deleted, Time: storetest.T0.Add(2 * time.Second), Resource: storetest.Res(path(3), "v1")},
		store.Change{Kind: rs.Created, Time: storetest.T0.Add(2 * time.Second), Resource: storetest.Res(path(3), "v3")})
	first, last, err := s.Apply(ctx, store.Batch{Changes: cs, Touch: touch})
	if err != nil {
		t.Fatal(err)
	}
	if first != 1001 || last != uint64(1000+len(cs)) {
		t.Errorf("seqs %d..%d", first, last)
	}
	if err := storetest.CheckReplay(ctx, s); err != nil {
		t.Error(err)
	}
	st, _ := s.Stats(ctx)
	if want := 1000 - 250 + 1000; st.Resources != want || st.LastSeq != last {
		t.Errorf("stats %+v, want %d resources", st, want)
	}
	if r, _ := s.Get(ctx, path(2)); r.Inode != 7 {
		t.Errorf("touch: inode %d", r.Inode)
	}
	if r, _ := s.Get(ctx, path(3)); r.MD5 != storetest.Res("", "v3").MD5 {
		t.Errorf("delete+create: %+v", r)
	}
	// A COPY that hits an existing path.
	cs = cs[:0]
	for i := range 1000 {
		cs = append(cs, store.Change{Kind: rs.Created, Time: storetest.T0.Add(3 * time.Second), Resource: storetest.Res(path(5000+i), "x")})
	}
	cs[500].Resource.Path = path(0)
	if _, _, err := s.Apply(ctx, store.Batch{Changes: cs}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("creating an existing path in a COPY: %v, want ErrConflict", err)
	} else {
		t.Log(err)
	}
	if st2, _ := s.Stats(ctx); st2 != st {
		t.Errorf("refused batch changed the stats: %+v, was %+v", st2, st)
	}
	if _, err := s.Get(ctx, path(5000)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("refused batch wrote: %v", err)
	}
}

// TestLeastPrivilege: once the schema exists, a role with only SELECT,
// INSERT, UPDATE and DELETE on the tables opens and uses the store.
func TestLeastPrivilege(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	u := pgtest.Database(t)
	admin := open(t, u, "p")
	role := "rs_app_" + strings.ToLower(strings.TrimPrefix(u[strings.LastIndex(u, "/")+1:strings.Index(u, "?")], "t_"))
	for _, q := range []string{
		`CREATE ROLE ` + role + ` LOGIN`,
		`REVOKE CREATE ON SCHEMA public FROM PUBLIC`,
		`GRANT USAGE ON SCHEMA public TO ` + role,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ` + role,
	} {
		if _, err := admin.Pool().Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { admin.Pool().Exec(context.Background(), `DROP OWNED BY `+role+`; DROP ROLE `+role) })
	app := open(t, strings.Replace(u, "postgres@", role+"@", 1), "p")
	if _, _, err := app.Apply(ctx, store.Batch{Changes: []store.Change{{Kind: rs.Created, Time: storetest.T0, Resource: storetest.Res("a", "A")}}}); err != nil {
		t.Fatal(err)
	}
	if _, rel, err := app.Lead(ctx); err != nil {
		t.Fatal(err)
	} else {
		rel()
	}
	if err := storetest.CheckReplay(ctx, app); err != nil {
		t.Error(err)
	}
	// A new set needs no more than that.
	other := open(t, strings.Replace(u, "postgres@", role+"@", 1), "new set")
	if err := other.PutMeta(ctx, "k", nil); err != nil {
		t.Fatal(err)
	}
}

// TestPoolShared: the Stores of one process on one URL share a pool;
// closing one leaves the others working.
func TestPoolShared(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	u := pgtest.Database(t)
	a, b := open(t, u, "a"), open(t, u, "b")
	if a.Pool() != b.Pool() {
		t.Error("two Stores on one URL have two pools")
	}
	c, err := pgstore.Open(ctx, u, "c", &pgstore.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Pool() == a.Pool() {
		t.Error("other options, same pool")
	}
	a.Close()
	if err := b.PutMeta(ctx, "k", []byte("v")); err != nil {
		t.Fatalf("b after a's Close: %v", err)
	}
	if _, err := a.Stats(ctx); !errors.Is(err, store.ErrClosed) {
		t.Errorf("a after Close: %v", err)
	}
	b.Close()
	d := open(t, u, "a") // a new pool after the last Close
	if _, err := d.Stats(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSessionSettings: the store's sessions carry the keepalive settings
// that bound a vanished leader's hold on the role, and the planner
// settings that keep every query on its index.
func TestSessionSettings(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	u := pgtest.Database(t)
	for _, tc := range []struct {
		opts *pgstore.Options
		idle string
	}{{nil, "5"}, {&pgstore.Options{KeepAlive: 2 * time.Second}, "2"}} {
		s, err := pgstore.Open(ctx, u, "", tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		var idle, count, seqscan, app string
		err = s.Pool().QueryRow(ctx, `SELECT current_setting('tcp_keepalives_idle'), current_setting('tcp_keepalives_count'),
			current_setting('enable_seqscan'), current_setting('application_name')`).Scan(&idle, &count, &seqscan, &app)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if idle != tc.idle || count != "3" || seqscan != "off" || app != "resourcesync" {
			t.Errorf("options %+v: keepalive idle %s count %s, enable_seqscan %s, application_name %s", tc.opts, idle, count, seqscan, app)
		}
	}
}

// TestResourcesSnapshot: Resources reads one snapshot across its pages:
// commits made (by another goroutine) during the loop are not seen.
func TestResourcesSnapshot(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	s := open(t, pgtest.Database(t), "")
	var cs []store.Change
	for i := range 2500 { // three pages
		cs = append(cs, store.Change{Kind: rs.Created, Time: storetest.T0, Resource: storetest.Res(path(i), "x")})
	}
	if _, _, err := s.Apply(ctx, store.Batch{Changes: cs}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for r, err := range s.Resources(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			done := make(chan error)
			go func() {
				_, _, err := s.Apply(ctx, store.Batch{Changes: []store.Change{
					{Kind: rs.Deleted, Time: storetest.T0, Resource: storetest.Res(path(2400), "x")},
					{Kind: rs.Created, Time: storetest.T0, Resource: storetest.Res(path(9999), "x")},
				}})
				done <- err
			}()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if r.Path == path(9999) {
			t.Errorf("a record created during the loop was seen")
		}
		n++
	}
	if n != 2500 {
		t.Errorf("%d records, want the 2500 of the snapshot", n)
	}
}
