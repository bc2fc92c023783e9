package aggstoretest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
)

// t0 is a fixed time with microseconds, as every store keeps them.
var t0 = time.Date(2026, 3, 1, 12, 30, 45, 123456000, time.UTC)

// shortTTL is the lease of the expiry tests: long enough that a claim
// and the next call fit in it, short enough to wait for.
const shortTTL = time.Second

// expiryWait bounds the polling for a short lease to run out.
const expiryWait = 15 * time.Second

// must is used as must(f())(t): Go passes a multi-value call only as the
// whole argument list.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func isErr(t *testing.T, err, want error, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}

// eventually polls cond until it holds or expiryWait passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(expiryWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, expiryWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func sameTime(a, b time.Time) bool {
	return a.Equal(b) && a.Location() == b.Location() || a.IsZero() && b.IsZero()
}

func run(source, node string) aggstore.Run {
	return aggstore.Run{Source: source, Node: node, Mode: "incremental", Start: t0}
}

func idsOf(rs []aggstore.Run) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func leasesOf(t *testing.T, s aggstore.Store) map[string]string {
	t.Helper()
	ls := must(s.Leases(context.Background()))(t)
	out := map[string]string{}
	for i, l := range ls {
		if i > 0 && ls[i-1].Source >= l.Source {
			t.Fatalf("leases not sorted by Source: %+v", ls)
		}
		out[l.Source] = l.Node
	}
	return out
}

func runOf(t *testing.T, s aggstore.Store, source string, id int64) aggstore.Run {
	t.Helper()
	for _, r := range must(s.Runs(context.Background(), source, 0))(t) {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("run %d of %s not found", id, source)
	return aggstore.Run{}
}

// Run checks every method's contract on fresh stores from open (one per
// subtest). open registers the store's Close with t.Cleanup or the test
// closes it; closing twice must be harmless. Nodes A and B share the
// handle.
func Run(t *testing.T, open func(t *testing.T) aggstore.Store) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			c.fn(t, s, s)
		})
	}

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		ctx := context.Background()
		_, err := s.Claim(ctx, "", "src", time.Minute)
		isErr(t, err, aggstore.ErrInvalid, "claim by an empty node")
		_, err = s.Claim(ctx, "A", "", time.Minute)
		isErr(t, err, aggstore.ErrInvalid, "claim of an empty source")
		_, err = s.Claim(ctx, "A", "src", 0)
		isErr(t, err, aggstore.ErrInvalid, "claim with ttl 0")
		_, err = s.Heartbeat(ctx, "", time.Minute)
		isErr(t, err, aggstore.ErrInvalid, "heartbeat of an empty node")
		isErr(t, s.PutSchedule(ctx, aggstore.Schedule{}), aggstore.ErrInvalid, "schedule without a source")
		if ls := must(s.Leases(ctx))(t); len(ls) != 0 {
			t.Fatalf("an invalid claim left leases %+v", ls)
		}
		must(s.Claim(ctx, "A", "src", time.Minute))(t)
		id := must(s.StartRun(ctx, run("src", "A")))(t)
		for _, st := range []string{"", aggstore.StateRunning, aggstore.StateInterrupted, "done"} {
			r := run("src", "A")
			r.ID, r.State = id, st
			isErr(t, s.FinishRun(ctx, r, aggstore.Schedule{Source: "src"}), aggstore.ErrInvalid, "finish with state "+st)
		}
		r := run("src", "A")
		r.ID, r.State = id, aggstore.StateOK
		isErr(t, s.FinishRun(ctx, r, aggstore.Schedule{Source: "other"}), aggstore.ErrInvalid, "finish with another source's schedule")
		if got := runOf(t, s, "src", id); got.State != aggstore.StateRunning {
			t.Fatalf("a refused finish changed the run: %+v", got)
		}
		if ss := must(s.Schedules(ctx))(t); len(ss) != 0 {
			t.Fatalf("a refused finish wrote schedules %+v", ss)
		}
	})

	t.Run("Closed", func(t *testing.T) {
		s := open(t)
		ctx := context.Background()
		ok(t, s.Close())
		_, err := s.Claim(ctx, "A", "src", time.Minute)
		isErr(t, err, aggstore.ErrClosed, "claim after close")
		_, err = s.Runs(ctx, "src", 0)
		isErr(t, err, aggstore.ErrClosed, "runs after close")
		isErr(t, s.PutSchedule(ctx, aggstore.Schedule{Source: "src"}), aggstore.ErrClosed, "put schedule after close")
		ok(t, s.Close())
	})
}

// cases run on two node names, A on handle a and B on handle b (a and b
// may be one handle).
var cases = []struct {
	name string
	fn   func(t *testing.T, a, b aggstore.Store)
}{
	{"Leases", testLeases},
	{"LeaseExpiry", testLeaseExpiry},
	{"ClaimRace", testClaimRace},
	{"TakeoverRace", testTakeoverRace},
	{"StartRunNeedsLease", testStartRunNeedsLease},
	{"FinishRunOnce", testFinishRunOnce},
	{"InterruptRuns", testInterruptRuns},
	{"RunsNewestFirst", testRunsNewestFirst},
	{"PruneRuns", testPruneRuns},
	{"Schedules", testSchedules},
	{"Heartbeat", testHeartbeat},
	{"Fencing", testFencing},
	{"FinishRunFenced", testFinishRunFenced},
	{"NodeInUse", testNodeInUse},
}

func testLeases(t *testing.T, a, b aggstore.Store) {
	ctx := context.Background()
	if !must(a.Claim(ctx, "A", "s1", time.Minute))(t) {
		t.Fatal("A could not claim a free source")
	}
	if must(b.Claim(ctx, "B", "s1", time.Minute))(t) {
		t.Fatal("B claimed a source A holds")
	}
	if !must(b.Claim(ctx, "B", "s2", time.Minute))(t) {
		t.Fatal("B could not claim a free source")
	}
	ls := must(b.Leases(ctx))(t)
	if len(ls) != 2 || ls[0] != (aggstore.Lease{Source: "s1", Node: "A", Expires: ls[0].Expires, Epoch: ls[0].Epoch}) || ls[0].Epoch <= 0 || ls[1].Source != "s2" || ls[1].Node != "B" {
		t.Fatalf("leases %+v", ls)
	}
	if ls[0].Expires.IsZero() {
		t.Fatal("lease without expiry")
	}
	// Renewal extends the lease.
	if !must(a.Claim(ctx, "A", "s1", time.Hour))(t) {
		t.Fatal("A could not renew its lease")
	}
	if l := must(a.Leases(ctx))(t)[0]; !l.Expires.After(ls[0].Expires) {
		t.Fatalf("renewal for an hour did not extend the lease: %v then %v", ls[0].Expires, l.Expires)
	}
	// Release leaves others' leases alone, hands over at once.
	ok(t, a.Release(ctx, "A", "s2"))
	ok(t, b.Release(ctx, "B", "s1"))
	if got := leasesOf(t, a); len(got) != 2 || got["s1"] != "A" || got["s2"] != "B" {
		t.Fatalf("release of others' leases changed them: %v", got)
	}
	ok(t, a.Release(ctx, "A", "s1", "absent"))
	if got := leasesOf(t, b); len(got) != 1 || got["s2"] != "B" {
		t.Fatalf("after A released s1: %v", got)
	}
	if !must(b.Claim(ctx, "B", "s1", time.Minute))(t) {
		t.Fatal("B could not claim what A released")
	}
	if !must(a.Claim(ctx, "A", "s3", time.Minute))(t) {
		t.Fatal("A could not claim s3")
	}
	// Release without sources: all of the node's.
	ok(t, b.Release(ctx, "B"))
	if got := leasesOf(t, a); len(got) != 1 || got["s3"] != "A" {
		t.Fatalf("after B released all: %v", got)
	}
}

func testLeaseExpiry(t *testing.T, a, b aggstore.Store) {
	ctx := context.Background()
	// A holds x and y briefly, with a run on each, and stops renewing.
	for _, src := range []string{"x", "y"} {
		if !must(a.Claim(ctx, "A", src, shortTTL))(t) {
			t.Fatalf("A could not claim %s", src)
		}
	}
	if must(b.Claim(ctx, "B", "y", time.Minute))(t) {
		t.Fatal("B claimed y while A's lease is live")
	}
	idX := must(a.StartRun(ctx, run("x", "A")))(t)
	idY := must(a.StartRun(ctx, run("y", "A")))(t)
	eventually(t, "A's leases expire", func() bool { return len(must(b.Leases(ctx))(t)) == 0 })
	// Expired: A is no holder, for StartRun either.
	_, err := a.StartRun(ctx, run("x", "A"))
	isErr(t, err, aggstore.ErrNotHolder, "StartRun on an expired lease")
	// A takes its own expired lease on x again: a new tenure, in which
	// its run of the old one does not go on (another node may have
	// held x meanwhile, as far as that run can tell).
	if !must(a.Claim(ctx, "A", "x", time.Minute))(t) {
		t.Fatal("A could not reclaim its own expired lease")
	}
	if r := runOf(t, b, "x", idX); r.State != aggstore.StateInterrupted {
		t.Fatalf("A's run on x after A reclaimed x: %+v", r)
	}
	// B takes y over: A's run there is interrupted, and A fenced.
	if !must(b.Claim(ctx, "B", "y", time.Minute))(t) {
		t.Fatal("B could not take over an expired lease")
	}
	r := runOf(t, a, "y", idY)
	if r.State != aggstore.StateInterrupted || r.End.IsZero() || r.Node != "A" {
		t.Fatalf("A's run on y after B took y over: %+v", r)
	}
	fin := run("y", "A")
	fin.ID, fin.State, fin.End = idY, aggstore.StateOK, t0.Add(time.Minute)
	isErr(t, a.FinishRun(ctx, fin, aggstore.Schedule{Source: "y"}), aggstore.ErrNotRunning, "finish of a run interrupted by a takeover")
	if must(a.Claim(ctx, "A", "y", time.Minute))(t) {
		t.Fatal("A took y back from B")
	}
	_, err = a.StartRun(ctx, run("y", "A"))
	isErr(t, err, aggstore.ErrNotHolder, "StartRun after a takeover")
	if got := leasesOf(t, a); len(got) != 2 || got["x"] != "A" || got["y"] != "B" {
		t.Fatalf("leases after the takeover: %v", got)
	}
	if rs := must(a.Runs(ctx, "y", 0))(t); len(rs) != 1 {
		t.Fatalf("runs of y: %+v", rs)
	}
}

// testClaimRace claims a few sources from many goroutines as many nodes
// at once, and checks that each source has had one holder only.
func testClaimRace(t *testing.T, a, b aggstore.Store) {
	ctx := context.Background()
	const nodes, rounds = 6, 15
	sources := []string{"r1", "r2", "r3"}
	type win struct{ node, source string }
	wins := make(chan win, nodes*rounds*len(sources))
	errs := make(chan error, nodes)
	start := make(chan struct{})
	done := make(chan struct{})
	for n := range nodes {
		s, node := a, fmt.Sprint("A", n)
		if n%2 == 1 {
			s, node = b, fmt.Sprint("B", n)
		}
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			for range rounds {
				for _, src := range sources {
					held, err := s.Claim(ctx, node, src, time.Minute)
					if err != nil {
						errs <- err
						return
					}
					if held {
						wins <- win{node, src}
					}
				}
			}
		}()
	}
	close(start)
	for range nodes {
		<-done
	}
	close(wins)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	holder := map[string]string{}
	for w := range wins {
		if h, seen := holder[w.source]; seen && h != w.node {
			t.Fatalf("%s held by both %s and %s", w.source, h, w.node)
		}
		holder[w.source] = w.node
	}
	got := leasesOf(t, b)
	for _, src := range sources {
		if holder[src] == "" || got[src] != holder[src] {
			t.Fatalf("%s: claimed by %q, lease %q", src, holder[src], got[src])
		}
	}
}

func testStartRunNeedsLease(t *testing.T, a, b aggstore.Store) {
	ctx := context.Background()
	_, err := a.StartRun(ctx, run("s", "A"))
	isErr(t, err, aggstore.ErrNotHolder, "StartRun never claimed")
	must(b.Claim(ctx, "B", "s", time.Minute))(t)
	_, err = a.StartRun(ctx, run("s", "A"))
	isErr(t, err, aggstore.ErrNotHolder, "StartRun on another node's lease")
	if rs := must(a.Runs(ctx, "s", 0))(t); len(rs) != 0 {
		t.Fatalf("refused StartRun wrote %+v", rs)
	}
	r := run("s", "B")
	r.State, r.ID, r.Fetched = aggstore.StateOK, 99, 7 // the store sets State and ID
	id := must(b.StartRun(ctx, r))(t)
	got := runOf(t, a, "s", id)
	if got.State != aggstore.StateRunning || got.Node != "B" || got.Mode != "incremental" || !sameTime(got.Start, t0) || !got.End.IsZero() {
		t.Fatalf("started run: %+v", got)
	}
	ok(t, b.Release(ctx, "B", "s"))
	_, err = b.StartRun(ctx, run("s", "B"))
	isErr(t, err, aggstore.ErrNotHolder, "StartRun after Release")
	if rs := must(a.Runs(ctx, "s", 0))(t); len(rs) != 1 {
		t.Fatalf("runs after a refused StartRun: %+v", rs)
	}
}

func testFinishRunOnce(t *testing.T, a, b aggstore.Store) {
	ctx := context.Background()
	must(a.Claim(ctx, "A", "s", time.Minute))(t)
	id := must(a.StartRun(ctx, run("s", "A")))(t)
	fin := aggstore.Run{ID: id, Source: "s", Node: "A", Mode: "incremental", Start: t0, End: t0.Add(90 * time.Second),
		State: aggstore.StateFailed, Fetched: 12, Deleted: 3, Failed: 2, Bytes: 1 << 40, Lag: 1500 * time.Millisecond,
		Error: "GET https://src.example/cl.xml: 503", Reason: "unreachable"}
	next := aggstore.Schedule{Source: "s", Next: t0.Add(5 * time.Minute), Failures: 1, LastSuccess: t0.Add(-time.Hour), LastRun: id}
	ok(t, a.FinishRun(ctx, fin, next))
	got := runOf(t, b, "s", id)
	want := fin
	if !sameTime(got.Start, want.Start) || !sameTime(got.End, want.End) {
		t.Fatalf("finished run times: %v %v, want %v %v", got.Start, got.End, want.Start, want.End)
	}
	got.Start, got.End, want.Start, want.End = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if got.Epoch <= 0 {
		t.Fatalf("finished run without its epoch: %+v", got)
	}
	want.Epoch = got.Epoch // the store's
	if got != want {
		t.Fatalf("finished run\n got %+v\nwant %+v", got, want)
	}
	ss := must(b.Schedules(ctx))(t)
	if len(ss) != 1 || ss[0].Source != "s" || !sameTime(ss[0].Next, next.Next) || ss[0].Failures != 1 ||
		!sameTime(ss[0].LastSuccess, next.LastSuccess) || ss[0].LastRun != id {
		t.Fatalf("schedule after finish: %+v", ss)
	}
	// A second outcome is refused, from either handle, and changes nothing.
	again := fin
	again.State, again.Fetched, again.Error = aggstore.StateOK, 99, ""
	isErr(t, b.FinishRun(ctx, again, aggstore.Schedule{Source: "s", Failures: 7}), aggstore.ErrNotRunning, "second FinishRun")
	isErr(t, a.FinishRun(ctx, again, aggstore.Schedule{Source: "s", Failures: 7}), aggstore.ErrNotRunning, "second FinishRun")
	if r := runOf(t, a, "s", id); r.State != aggstore.StateFailed || r.Fetched != 12 {
		t.Fatalf("second FinishRun changed the run: %+v", r)
	}
	if ss := must(a.Schedules(ctx))(t); ss[0].Failures != 1 {
		t.Fatalf("second FinishRun changed the schedule: %+v", ss)
	}
	unknown := again
	unknown.ID = id + 1000
	isErr(t, a.FinishRun(ctx, unknown, aggstore.Schedule{Source: "s"}), aggstore.ErrNotRunning, "FinishRun of an unknown run")
	// A success, with the schedule's Source left to the store.
	id2 := must(a.StartRun(ctx, run("s", "A")))(t)
	if id2 <= id {
		t.Fatalf("run IDs not increasing: %d then %d", id, id2)
	}
	ok(t, a.FinishRun(ctx, aggstore.Run{ID: id2, State: aggstore.StateOK, End: t0.Add(time.Hour), Fetched: 1},
		aggstore.Schedule{Next: t0.Add(2 * time.Hour), LastSuccess: t0.Add(time.Hour)}))
	if r := runOf(t, b, "s", id2); r.State != aggstore.StateOK || r.Fetched != 1 || r.Source != "s" || r.Node != "A" || r.Mode != "incremental" {
		t.Fatalf("second run: %+v", r)
	}
	ss = must(b.Schedules(ctx))(t)
	if len(ss) != 1 || ss[0].Source != "s" || ss[0].Failures != 0 || ss[0].LastRun != id2 || !sameTime(ss[0].Next, t0.Add(2*time.Hour)) {
		t.Fatalf("schedule after the second finish: %+v", ss)
	}
}

func testInterruptRuns(t *testing.T, a, b aggstore.Store) {
	ctx := context.Background()
	for _, src := range []string{"s1", "s2"} {
		must(a.Claim(ctx, "A", src, time.Minute))(t)
	}
	must(b.Claim(ctx, "B", "s3", time.Minute))(t)
	a1 := must(a.StartRun(ctx, run("s1", "A")))(t)
	a2 := must(a.StartRun(ctx, run("s2", "A")))(t)
	a3 := must(a.StartRun(ctx, run("s2", "A")))(t)
	ok(t, a.FinishRun(ctx, aggstore.Run{ID: a3, State: aggstore.StateOK, End: t0.Add(time.Minute)}, aggstore.Schedule{Source: "s2"}))
	b1 := must(b.StartRun(ctx, run("s3", "B")))(t)
	now := t0.Add(time.Hour)
	if n := must(a.InterruptRuns(ctx, "A", now))(t); n != 2 {
		t.Fatalf("interrupted %d runs, want 2", n)
	}
	for _, c := range []struct {
		src   string
		id    int64
		state string
	}{{"s1", a1, aggstore.StateInterrupted}, {"s2", a2, aggstore.StateInterrupted}, {"s2", a3, aggstore.StateOK}, {"s3", b1, aggstore.StateRunning}} {
		r := runOf(t, b, c.src, c.id)
		if r.State != c.state {
			t.Fatalf("run %d: state %s, want %s", c.id, r.State, c.state)
		}
		if c.state == aggstore.StateInterrupted && !sameTime(r.End, now) {
			t.Fatalf("interrupted run %d ends %v, want %v", c.id, r.End, now)
		}
	}
	if n := must(b.InterruptRuns(ctx, "A", now))(t); n != 0 {
		t.Fatalf("second InterruptRuns: %d", n)
	}
	isErr(t, a.FinishRun(ctx, aggstore.Run{ID: a1, State: aggstore.StateOK}, aggstore.Schedule{Source: "s1"}), aggstore.ErrNotRunning, "FinishRun after InterruptRuns")
	if ss := must(a.Schedules(ctx))(t); len(ss) != 1 || ss[0].Source != "s2" {
		t.Fatalf("refused FinishRun wrote a schedule: %+v", ss)
	}
}

func testRunsNewestFirst(t *testing.T, a, b aggstore.Store) {
	ctx := context.Background()
	must(a.Claim(ctx, "A", "s", time.Minute))(t)
	must(b.Claim(ctx, "B", "o", time.Minute))(t)
	var ids []int64
	// A's runs through a (a node is one handle: the one that took its
	// lease), B's through b in between.
	for range 5 {
		ids = append(ids, must(a.StartRun(ctx, run("s", "A")))(t))
		must(b.StartRun(ctx, run("o", "B")))(t)
	}
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatalf("IDs not increasing: %v", ids)
	}
	ok(t, a.FinishRun(ctx, aggstore.Run{ID: ids[1], State: aggstore.StateOK}, aggstore.Schedule{Source: "s"}))
	slices.Reverse(ids)
	if got := idsOf(must(b.Runs(ctx, "s", 0))(t)); !slices.Equal(got, ids) {
		t.Fatalf("runs %v, want %v", got, ids)
	}
	if got := idsOf(must(a.Runs(ctx, "s", 2))(t)); !slices.Equal(got, ids[:2]) {
		t.Fatalf("runs with limit 2: %v, want %v", got, ids[:2])
	}
	if got := must(a.Runs(ctx, "s", 50))(t); len(got) != 5 {
		t.Fatalf("runs with limit 50: %d", len(got))
	}
	for _, r := range must(a.Runs(ctx, "o", 0))(t) {
		if r.Source != "o" {
			t.Fatalf("runs of o include %+v", r)
		}
	}
	if got := must(a.Runs(ctx, "none", 0))(t); len(got) != 0 {
		t.Fatalf("runs of an unknown source: %+v", got)
	}
}

func testSchedules(t *testing.T, a, b aggstore.Store) {
	ctx := context.Background()
	in := []aggstore.Schedule{
		{Source: "https://c.example/", Next: t0, Failures: 2},
		{Source: "https://a.example/", LastSuccess: t0, LastRun: 4},
		{Source: "https://b.example/"},
	}
	for _, s := range in {
		ok(t, a.PutSchedule(ctx, s))
	}
	ok(t, b.PutSchedule(ctx, aggstore.Schedule{Source: "https://b.example/", Next: t0.Add(time.Minute), Failures: 5}))
	got := must(b.Schedules(ctx))(t)
	want := []aggstore.Schedule{in[1], {Source: "https://b.example/", Next: t0.Add(time.Minute), Failures: 5}, in[0]}
	if len(got) != len(want) {
		t.Fatalf("schedules %+v", got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Source != w.Source || !sameTime(g.Next, w.Next) || g.Failures != w.Failures || !sameTime(g.LastSuccess, w.LastSuccess) || g.LastRun != w.LastRun {
			t.Fatalf("schedule %d: %+v, want %+v", i, g, w)
		}
	}
	// Forget drops the schedule and the lease; the history stays.
	src := "https://a.example/"
	must(a.Claim(ctx, "A", src, time.Minute))(t)
	id := must(a.StartRun(ctx, run(src, "A")))(t)
	ok(t, a.FinishRun(ctx, aggstore.Run{ID: id, State: aggstore.StateOK}, aggstore.Schedule{Source: src}))
	ok(t, b.Forget(ctx, src))
	ok(t, b.Forget(ctx, "https://unknown.example/"))
	for _, s := range must(a.Schedules(ctx))(t) {
		if s.Source == src {
			t.Fatal("forgotten schedule listed")
		}
	}
	if got := leasesOf(t, a); got[src] != "" {
		t.Fatalf("forgotten source still leased: %v", got)
	}
	if rs := must(a.Runs(ctx, src, 0))(t); len(rs) != 1 || rs[0].ID != id {
		t.Fatalf("forget dropped the history: %+v", rs)
	}
	if !must(b.Claim(ctx, "B", src, time.Minute))(t) {
		t.Fatal("B could not claim a forgotten source")
	}
}

func testHeartbeat(t *testing.T, a, b aggstore.Store) {
	ctx := context.Background()
	if got := must(a.Heartbeat(ctx, "A", time.Minute))(t); !slices.Equal(got, []string{"A"}) {
		t.Fatalf("alive %v", got)
	}
	if got := must(b.Heartbeat(ctx, "B", shortTTL))(t); !slices.Equal(got, []string{"A", "B"}) {
		t.Fatalf("alive %v", got)
	}
	if got := must(b.Heartbeat(ctx, "0", shortTTL))(t); !slices.Equal(got, []string{"0", "A", "B"}) {
		t.Fatalf("alive, sorted: %v", got)
	}
	// B and 0 stop beating.
	eventually(t, "B's heartbeat expires", func() bool {
		return slices.Equal(must(a.Heartbeat(ctx, "A", time.Minute))(t), []string{"A"})
	})
	if got := must(b.Heartbeat(ctx, "B", time.Minute))(t); !slices.Equal(got, []string{"A", "B"}) {
		t.Fatalf("B back: alive %v", got)
	}
}

// testTakeoverRace starts runs as A while B waits to take A's lease over
// as it expires: every run A got recorded must end up interrupted, none
// left running under B's lease.
func testTakeoverRace(t *testing.T, a, b aggstore.Store) {
	ctx := context.Background()
	if !must(a.Claim(ctx, "A", "s", shortTTL))(t) {
		t.Fatal("A could not claim")
	}
	errs := make(chan error, 2)
	started := make(chan int, 1)
	go func() {
		n := 0
		defer func() { started <- n }()
		for {
			_, err := a.StartRun(ctx, run("s", "A"))
			if errors.Is(err, aggstore.ErrNotHolder) {
				errs <- nil
				return
			}
			if err != nil {
				errs <- err
				return
			}
			n++
			time.Sleep(5 * time.Millisecond)
		}
	}()
	go func() {
		deadline := time.Now().Add(expiryWait)
		for time.Now().Before(deadline) {
			held, err := b.Claim(ctx, "B", "s", time.Minute)
			if err != nil || held {
				errs <- err
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		errs <- fmt.Errorf("B did not take the lease over within %v", expiryWait)
	}()
	for range 2 {
		ok(t, <-errs)
	}
	n := <-started
	rs := must(b.Runs(ctx, "s", 0))(t)
	if len(rs) != n || n == 0 {
		t.Fatalf("A started %d runs, %d recorded", n, len(rs))
	}
	for _, r := range rs {
		if r.State != aggstore.StateInterrupted {
			t.Fatalf("run %d of A after B took the lease over: %s", r.ID, r.State)
		}
	}
	if got := leasesOf(t, a); got["s"] != "B" {
		t.Fatalf("leases %v", got)
	}
}

func testPruneRuns(t *testing.T, a, b aggstore.Store) {
	ctx := context.Background()
	must(a.Claim(ctx, "A", "s", time.Minute))(t)
	must(a.Claim(ctx, "A", "o", time.Minute))(t)
	var ids []int64
	for i := range 8 {
		id := must(a.StartRun(ctx, run("s", "A")))(t)
		ids = append(ids, id)
		if i != 1 { // run 1 stays running
			ok(t, a.FinishRun(ctx, aggstore.Run{ID: id, State: aggstore.StateOK}, aggstore.Schedule{Source: "s"}))
		}
		must(a.StartRun(ctx, run("o", "A")))(t)
	}
	n := must(b.PruneRuns(ctx, "s", 3))(t)
	// Kept: the newest 3 (ids 5, 6, 7) and the running one (1).
	want := []int64{ids[7], ids[6], ids[5], ids[1]}
	if got := idsOf(must(a.Runs(ctx, "s", 0))(t)); !slices.Equal(got, want) || n != 4 {
		t.Fatalf("after pruning to 3: runs %v (deleted %d), want %v (deleted 4)", got, n, want)
	}
	if got := must(a.Runs(ctx, "o", 0))(t); len(got) != 8 {
		t.Fatalf("pruning s deleted runs of o: %d left", len(got))
	}
	if n := must(b.PruneRuns(ctx, "s", 3))(t); n != 0 {
		t.Fatalf("pruning again deleted %d", n)
	}
	if n := must(b.PruneRuns(ctx, "none", 3))(t); n != 0 {
		t.Fatalf("pruning an unknown source deleted %d", n)
	}
	// The running run still finishes once.
	ok(t, a.FinishRun(ctx, aggstore.Run{ID: ids[1], State: aggstore.StateFailed}, aggstore.Schedule{Source: "s"}))
}

func leaseOf(t *testing.T, s aggstore.Store, source string) aggstore.Lease {
	t.Helper()
	for _, l := range must(s.Leases(context.Background()))(t) {
		if l.Source == source {
			return l
		}
	}
	return aggstore.Lease{}
}

// testFencing: a run is fenced to the lease tenure it started under.
// Renewals keep the epoch; every new tenure (after an expiry, a release,
// a takeover, a Forget) has a greater one, and ends the runs of the
// earlier ones.
func testFencing(t *testing.T, a, b aggstore.Store) {
	ctx := context.Background()
	isErr(t, a.Fence(ctx, 12345), aggstore.ErrFenced, "fence of an unknown run")
	if !must(a.Claim(ctx, "A", "s", shortTTL))(t) {
		t.Fatal("A could not claim")
	}
	e1 := leaseOf(t, b, "s").Epoch
	if e1 <= 0 {
		t.Fatalf("epoch of a new lease: %d", e1)
	}
	id1 := must(a.StartRun(ctx, run("s", "A")))(t)
	if r := runOf(t, b, "s", id1); r.Epoch != e1 {
		t.Fatalf("run started under epoch %d records %d", e1, r.Epoch)
	}
	ok(t, a.Fence(ctx, id1))
	ok(t, b.Fence(ctx, id1)) // any handle may check
	must(a.Claim(ctx, "A", "s", shortTTL))(t)
	if e := leaseOf(t, b, "s").Epoch; e != e1 {
		t.Fatalf("a renewal changed the epoch: %d then %d", e1, e)
	}
	ok(t, a.Fence(ctx, id1))
	// Expired, not taken: fenced already (another node may take it at
	// any moment), and the node's own claim is a new tenure.
	eventually(t, "A's lease expires", func() bool { return len(must(b.Leases(ctx))(t)) == 0 })
	isErr(t, a.Fence(ctx, id1), aggstore.ErrFenced, "fence of a run whose lease expired")
	if !must(a.Claim(ctx, "A", "s", time.Minute))(t) {
		t.Fatal("A could not claim its expired lease again")
	}
	e2 := leaseOf(t, b, "s").Epoch
	if e2 <= e1 {
		t.Fatalf("epoch after an expiry: %d, then %d", e1, e2)
	}
	isErr(t, a.Fence(ctx, id1), aggstore.ErrFenced, "fence of a run of an earlier tenure")
	if r := runOf(t, b, "s", id1); r.State != aggstore.StateInterrupted {
		t.Fatalf("run of an earlier tenure: %+v", r)
	}
	id2 := must(a.StartRun(ctx, run("s", "A")))(t)
	ok(t, a.Fence(ctx, id2))
	// A finished run is fenced too: it writes nothing more.
	ok(t, a.FinishRun(ctx, aggstore.Run{ID: id2, State: aggstore.StateOK}, aggstore.Schedule{Source: "s"}))
	isErr(t, a.Fence(ctx, id2), aggstore.ErrFenced, "fence of a finished run")
	// Released and claimed again, by B: a new epoch.
	id3 := must(a.StartRun(ctx, run("s", "A")))(t)
	ok(t, a.Release(ctx, "A", "s"))
	isErr(t, a.Fence(ctx, id3), aggstore.ErrFenced, "fence of a run whose lease was released")
	if !must(b.Claim(ctx, "B", "s", time.Minute))(t) {
		t.Fatal("B could not claim a released lease")
	}
	e3 := leaseOf(t, a, "s").Epoch
	if e3 <= e2 {
		t.Fatalf("epoch after a release: %d, then %d", e2, e3)
	}
	if r := runOf(t, b, "s", id3); r.State != aggstore.StateInterrupted {
		t.Fatalf("A's run after B took the released lease: %+v", r)
	}
	id4 := must(b.StartRun(ctx, run("s", "B")))(t)
	ok(t, a.Fence(ctx, id4))
	// Forgotten and claimed again: still greater.
	ok(t, a.Forget(ctx, "s"))
	isErr(t, b.Fence(ctx, id4), aggstore.ErrFenced, "fence of a run of a forgotten Source")
	must(a.Claim(ctx, "A", "s", time.Minute))(t)
	if e4 := leaseOf(t, b, "s").Epoch; e4 <= e3 {
		t.Fatalf("epoch after a Forget: %d, then %d", e3, e4)
	}
}

// testFinishRunFenced: a run still recorded running whose tenure is over
// (its lease released) writes neither its outcome nor the schedule.
func testFinishRunFenced(t *testing.T, a, b aggstore.Store) {
	ctx := context.Background()
	must(a.Claim(ctx, "A", "s", time.Minute))(t)
	id := must(a.StartRun(ctx, run("s", "A")))(t)
	ok(t, a.PutSchedule(ctx, aggstore.Schedule{Source: "s", Failures: 4}))
	ok(t, a.Release(ctx, "A", "s"))
	isErr(t, a.FinishRun(ctx, aggstore.Run{ID: id, State: aggstore.StateOK}, aggstore.Schedule{Source: "s"}), aggstore.ErrFenced,
		"finish of a run whose lease was released")
	if r := runOf(t, b, "s", id); r.State != aggstore.StateRunning {
		t.Fatalf("a fenced finish changed the run: %+v", r)
	}
	if ss := must(b.Schedules(ctx))(t); len(ss) != 1 || ss[0].Failures != 4 {
		t.Fatalf("a fenced finish wrote the schedule: %+v", ss)
	}
	// The next tenure ends it.
	must(b.Claim(ctx, "B", "s", time.Minute))(t)
	if r := runOf(t, b, "s", id); r.State != aggstore.StateInterrupted {
		t.Fatalf("the fenced run after the next claim: %+v", r)
	}
}

// testNodeInUse: a node name is one handle's at a time. Two handles
// (two processes) heartbeating as one node: the second is refused while
// the first's heartbeat lives; once it has expired, the second takes the
// name over and the first's leases end (a first that was only paused
// is fenced when it comes back, and refused).
func testNodeInUse(t *testing.T, a, b aggstore.Store) {
	ctx := context.Background()
	must(a.Heartbeat(ctx, "N", shortTTL))(t)
	if !must(a.Claim(ctx, "N", "s", time.Minute))(t) {
		t.Fatal("N could not claim")
	}
	id := must(a.StartRun(ctx, run("s", "N")))(t)
	if a == b {
		// One handle: the same process heartbeats again.
		must(b.Heartbeat(ctx, "N", shortTTL))(t)
		ok(t, a.Fence(ctx, id))
		return
	}
	_, err := b.Heartbeat(ctx, "N", shortTTL)
	isErr(t, err, aggstore.ErrNodeInUse, "heartbeat as a node another handle is")
	if got := leasesOf(t, a); got["s"] != "N" {
		t.Fatalf("a refused heartbeat changed the leases: %v", got)
	}
	ok(t, a.Fence(ctx, id))
	eventually(t, "the second handle takes the name over", func() bool {
		_, err := b.Heartbeat(ctx, "N", time.Minute)
		if err != nil && !errors.Is(err, aggstore.ErrNodeInUse) {
			t.Fatal(err)
		}
		return err == nil
	})
	isErr(t, a.Fence(ctx, id), aggstore.ErrFenced, "fence of a run of the name's previous handle")
	_, err = a.Heartbeat(ctx, "N", time.Minute)
	isErr(t, err, aggstore.ErrNodeInUse, "heartbeat of the previous handle, back")
	if !must(b.Claim(ctx, "N", "s", time.Minute))(t) {
		t.Fatal("the new handle could not claim")
	}
	if r := runOf(t, b, "s", id); r.State != aggstore.StateInterrupted {
		t.Fatalf("the previous handle's run: %+v", r)
	}
	// Its lease is the new handle's, though the node's name is the same.
	if must(a.Claim(ctx, "N", "s", time.Minute))(t) {
		t.Fatal("the previous handle renewed the new handle's lease")
	}
	_, err = a.StartRun(ctx, run("s", "N"))
	isErr(t, err, aggstore.ErrNotHolder, "StartRun by the previous handle")
}
