package aggregate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/pgstore"
	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/source"
)

// leaseSources starts n small ResourceSync Sources on loopback (a
// directory each, published in-process) and returns them as lines.
func leaseSources(t *testing.T, n int) []Source {
	t.Helper()
	ctx := context.Background()
	var out []Source
	for i := range n {
		dir := t.TempDir()
		for k := range 3 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", k)), fmt.Appendf(nil, "source %d file %d", i, k), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		srv := httptest.NewUnstartedServer(nil)
		base := "http://" + srv.Listener.Addr().String() + "/"
		src, err := source.Open(source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "default", Dir: dir}},
			StateDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := src.Update(ctx); err != nil {
			t.Fatal(err)
		}
		srv.Config.Handler = src.Handler(nil)
		srv.Start()
		t.Cleanup(func() { srv.Close(); src.Close() })
		id := fmt.Sprintf("m/%02d", i)
		out = append(out, Source{ID: id, URL: base, Dest: id, Kind: KindResourceSync})
	}
	return out
}

// refusalCountingStore counts the StartRuns the store refused because the node
// did not hold the lease: a node that keeps trying a Source it gave back
// shows up here.
type refusalCountingStore struct {
	aggstore.Store
	notHolder atomic.Int64
}

func (c *refusalCountingStore) StartRun(ctx context.Context, r aggstore.Run) (int64, error) {
	id, err := c.Store.StartRun(ctx, r)
	if errors.Is(err, aggstore.ErrNotHolder) {
		c.notHolder.Add(1)
	}
	return id, err
}

// holders returns the live leases' holders, by Source.
func holders(t *testing.T, s aggstore.Store) map[string]string {
	t.Helper()
	ls, err := s.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range ls {
		out[l.Source] = l.Node
	}
	return out
}

func perNode(h map[string]string) map[string]int {
	out := map[string]int{}
	for _, n := range h {
		out[n]++
	}
	return out
}

func waitWithin(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLeasesFairShare: two Aggregators on one PostgreSQL database (two
// handles, as two processes have) split ten Sources five and five when
// the second joins; each Source runs on its holder only, one run at a
// time; a node that gave a Source back does not keep trying it; and when
// one stops gracefully, the other takes its Sources at its next lease
// round, before the leases the stopped one held would have expired: they
// moved because it released them (and left), not because they expired.
func TestLeasesFairShare(t *testing.T) {
	pgtest.Skip(t)
	const n = 10
	// A long lease against the keeper's tick (LeaseTTL/3 = 2 s): a
	// takeover by expiry would come at least 4 s after the stop, one by
	// release within one tick.
	const ttl = 6 * time.Second
	url := pgtest.Database(t)
	ctx := context.Background()
	open := func() *refusalCountingStore {
		s, err := pgstore.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return &refusalCountingStore{Store: s}
	}
	srcs := leaseSources(t, n)
	root := t.TempDir()
	hc, _ := testnet.Client(t)
	start := func(node string, st aggstore.Store) (*Aggregator, func()) {
		a, err := New(Options{Root: root, Store: st, Node: node, LeaseTTL: ttl, Workers: n, PerHost: 2,
			Interval: 300 * time.Millisecond, Jitter: 0.1, RunTimeout: time.Minute,
			Client: func(Source) (*http.Client, error) { return hc, nil }})
		if err != nil {
			t.Fatal(err)
		}
		a.SetSources(srcs)
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.Run(rctx) }()
		stopped := false
		stop := func() {
			if stopped {
				return
			}
			stopped = true
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("node %s: Run: %v", node, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("node %s did not stop", node)
			}
		}
		t.Cleanup(stop)
		return a, stop
	}
	sa, sb := open(), open()
	a, stopA := start("a", sa)
	waitWithin(t, "node a to hold every Source", 10*time.Second, func() bool { return perNode(holders(t, sa))["a"] == n })
	b, stopB := start("b", sb)
	// Each takes ceil(10/2) = 5: a gives back idle Sources beyond its
	// share, b takes them.
	waitWithin(t, "a split of five and five", 20*time.Second, func() bool {
		p := perNode(holders(t, sa))
		return p["a"] == n/2 && p["b"] == n/2
	})
	// The split is stable, and each node's snapshot agrees with the store.
	time.Sleep(ttl / 3 * 2)
	h := holders(t, sa)
	if p := perNode(h); p["a"] != n/2 || p["b"] != n/2 {
		t.Fatalf("split did not hold: %v", p)
	}
	for node, ag := range map[string]*Aggregator{"a": a, "b": b} {
		for _, r := range ag.Snapshot().Sources {
			if mine := r.State != StateElsewhere; mine != (h[r.ID] == node) {
				t.Errorf("node %s: %s in state %s, store holder %q", node, r.ID, r.State, h[r.ID])
			}
		}
	}
	// Each Source of b ran on b since the split.
	waitWithin(t, "every Source to run on its holder", 20*time.Second, func() bool {
		for id, node := range h {
			rs, err := sa.Runs(ctx, id, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) == 0 || rs[0].Node != node {
				return false
			}
		}
		return true
	})

	// b stops gracefully. The leases it held were renewed until now: they
	// would expire no earlier than these.
	var expires []time.Time
	ls, err := sa.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if l.Node == "b" {
			expires = append(expires, l.Expires)
		}
	}
	sort.Slice(expires, func(i, k int) bool { return expires[i].Before(expires[k]) })
	stopB()
	waitWithin(t, "a to take b's Sources", 3*ttl, func() bool { return perNode(holders(t, sa))["a"] == n })
	took := time.Now()
	if len(expires) != n/2 {
		t.Fatalf("b held %d leases before it stopped", len(expires))
	}
	if !took.Before(expires[0]) {
		t.Errorf("a took b's Sources at %v, not before b's leases expired (%v): they were not released", took, expires[0])
	}
	// And runs them.
	waitWithin(t, "a to run b's former Sources", 20*time.Second, func() bool {
		for _, s := range srcs {
			rs, err := sa.Runs(ctx, s.ID, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) == 0 || rs[0].Node != "a" {
				return false
			}
		}
		return true
	})
	stopA()

	// One run at a time per Source, across both nodes; none left running.
	for _, s := range srcs {
		rs, err := sa.Runs(ctx, s.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		checkRunsDisjoint(t, s.ID, rs)
	}
	// A node that gave a Source back (or was refused it) waits to hold it
	// again; it does not retry StartRun in a loop. A few refusals can
	// come from a lease lost between rounds.
	if na, nb := sa.notHolder.Load(), sb.notHolder.Load(); na+nb > n {
		t.Errorf("StartRun refused for want of the lease %d times (a) and %d times (b)", na, nb)
	}
	for _, s := range srcs {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(s.Dest), "f1.txt"))
		if err != nil || len(b) == 0 {
			t.Errorf("%s: mirror f1.txt: %q %v", s.ID, b, err)
		}
	}
}

// checkRunsDisjoint fails t unless source's runs (any order) ended and
// never overlap in time: [start, end] of one never intersects another's.
func checkRunsDisjoint(t *testing.T, source string, rs []aggstore.Run) {
	t.Helper()
	rs = append([]aggstore.Run(nil), rs...)
	sort.Slice(rs, func(i, k int) bool { return rs[i].Start.Before(rs[k].Start) })
	for i, r := range rs {
		if r.State == aggstore.StateRunning || r.End.IsZero() {
			t.Errorf("%s: run %d of %s still %s", source, r.ID, r.Node, r.State)
			continue
		}
		if i > 0 && r.Start.Before(rs[i-1].End) {
			p := rs[i-1]
			t.Errorf("%s: run %d of %s [%v, %v] overlaps run %d of %s [%v, %v]", source,
				r.ID, r.Node, r.Start.Format(time.RFC3339Nano), r.End.Format(time.RFC3339Nano),
				p.ID, p.Node, p.Start.Format(time.RFC3339Nano), p.End.Format(time.RFC3339Nano))
		}
	}
}

// TestLeasesTakeOverSchedule: a Source taken over from a node whose lease
// expired goes on from the schedule that node left in the store (next run
// in an hour, its last success), not from the copy the taking node read
// when it started (none: it would run the Source at once).
func TestLeasesTakeOverSchedule(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	st, err := pgstore.Open(ctx, pgtest.Database(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srcs := leaseSources(t, 1)
	id := srcs[0].ID
	hc, _ := testnet.Client(t)
	a, err := New(Options{Root: t.TempDir(), Store: st, Node: "a", LeaseTTL: 1500 * time.Millisecond, Interval: time.Hour,
		Client: func(Source) (*http.Client, error) { return hc, nil }})
	if err != nil {
		t.Fatal(err)
	}
	a.SetSources(srcs)
	// Node x holds the Source when a starts, and leaves its schedule.
	if ok, err := st.Claim(ctx, "x", id, time.Second); err != nil || !ok {
		t.Fatalf("claim by x: %v %v", ok, err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(rctx) }()
	defer func() {
		cancel()
		<-done
	}()
	waitWithin(t, "a's first lease round", 10*time.Second, func() bool {
		select {
		case <-a.firstRound:
			return true
		default:
			return false
		}
	})
	last := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	want := aggstore.Schedule{Source: id, Next: time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond), LastSuccess: last, LastRun: 7}
	if err := st.PutSchedule(ctx, want); err != nil {
		t.Fatal(err)
	}
	waitWithin(t, "a to take the Source", 10*time.Second, func() bool { return holders(t, st)[id] == "a" })
	waitWithin(t, "a's status to show it held", 5*time.Second, func() bool { return a.Snapshot().Sources[0].State != StateElsewhere })
	time.Sleep(500 * time.Millisecond) // a run started at once would be recorded by now
	row := a.Snapshot().Sources[0]
	if !row.Next.Equal(want.Next) || !row.LastSuccess.Equal(want.LastSuccess) {
		t.Errorf("a's schedule of the Source taken over: next %v, last success %v; want %v, %v", row.Next, row.LastSuccess, want.Next, want.LastSuccess)
	}
	if rs, err := st.Runs(ctx, id, 0); err != nil || len(rs) != 0 {
		t.Errorf("runs %v %v: a ran the Source before it was due", rs, err)
	}
}

// TestLeasesFairShareFollowed: Sources that are followed (always open,
// never idle) are split too when a node joins: the node beyond its share
// stops following some between their runs and lets their leases expire;
// the newcomer takes and follows them, and no two runs of a Source
// overlap.
func TestLeasesFairShareFollowed(t *testing.T) {
	pgtest.Skip(t)
	const n = 6
	const ttl = 3 * time.Second
	ctx := context.Background()
	url := pgtest.Database(t)
	srcs := leaseSources(t, n)
	for i := range srcs {
		srcs[i].Follow = true
	}
	root := t.TempDir()
	hc, _ := testnet.Client(t)
	var stores []aggstore.Store
	start := func(node string) *Aggregator {
		st, err := pgstore.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, st)
		a, err := New(Options{Root: root, Store: st, Node: node, LeaseTTL: ttl, Workers: n, Interval: time.Hour,
			// The Sources offer no hub: a follower opens the mirror and
			// polls; nothing is sent to this address.
			CallbackBase: "http://127.0.0.1:1/",
			Client:       func(Source) (*http.Client, error) { return hc, nil }})
		if err != nil {
			t.Fatal(err)
		}
		a.SetSources(srcs)
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.Run(rctx) }()
		t.Cleanup(func() {
			cancel()
			<-done
			st.Close()
		})
		return a
	}
	following := func(a *Aggregator) int {
		k := 0
		for _, r := range a.Snapshot().Sources {
			if r.State == StateFollowing {
				k++
			}
		}
		return k
	}
	a := start("a")
	waitWithin(t, "a to follow every Source", 20*time.Second, func() bool { return following(a) == n })
	b := start("b")
	waitWithin(t, "a split of the followed Sources", 6*ttl, func() bool {
		p := perNode(holders(t, stores[0]))
		return p["a"] == n/2 && p["b"] == n/2 && following(a) == n/2 && following(b) == n/2
	})
	for _, s := range srcs {
		rs, err := stores[0].Runs(ctx, s.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		checkRunsDisjoint(t, s.ID, rs)
	}
}
