package aggstoretest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
)

// RunDurable checks that what was committed survives closing and
// reopening: newState makes a fresh place (a file, a database) and
// returns a function that opens it.
func RunDurable(t *testing.T, newState func(t *testing.T) (open func() aggstore.Store)) {
	ctx := context.Background()
	open := newState(t)
	s := open()
	must(s.Heartbeat(ctx, "A", time.Hour))(t)
	must(s.Claim(ctx, "A", "s", time.Hour))(t)
	done := must(s.StartRun(ctx, run("s", "A")))(t)
	ok(t, s.FinishRun(ctx, aggstore.Run{ID: done, State: aggstore.StateOK, End: t0.Add(time.Minute), Fetched: 3, Lag: time.Second},
		aggstore.Schedule{Source: "s", Next: t0.Add(time.Hour), LastSuccess: t0.Add(time.Minute)}))
	running := must(s.StartRun(ctx, run("s", "A")))(t)
	ok(t, s.PutSchedule(ctx, aggstore.Schedule{Source: "t", Failures: 3}))
	ok(t, s.Close())

	s = open()
	defer s.Close()
	if got := must(s.Heartbeat(ctx, "B", time.Minute))(t); !slices.Equal(got, []string{"A", "B"}) {
		t.Fatalf("alive after reopen: %v", got)
	}
	if must(s.Claim(ctx, "B", "s", time.Minute))(t) {
		t.Fatal("A's lease did not survive the reopen")
	}
	rs := must(s.Runs(ctx, "s", 0))(t)
	if len(rs) != 2 || rs[0].ID != running || rs[0].State != aggstore.StateRunning || rs[1].ID != done ||
		rs[1].State != aggstore.StateOK || rs[1].Fetched != 3 || rs[1].Lag != time.Second || !sameTime(rs[1].End, t0.Add(time.Minute)) {
		t.Fatalf("runs after reopen: %+v", rs)
	}
	ss := must(s.Schedules(ctx))(t)
	if len(ss) != 2 || ss[0].Source != "s" || ss[0].LastRun != done || !sameTime(ss[0].Next, t0.Add(time.Hour)) || ss[1].Failures != 3 {
		t.Fatalf("schedules after reopen: %+v", ss)
	}
	// A restarted node ends its runs of before the crash; new IDs go on
	// increasing.
	if n := must(s.InterruptRuns(ctx, "A", t0.Add(time.Hour)))(t); n != 1 {
		t.Fatalf("interrupted %d after reopen", n)
	}
	// (A's lease is the previous handle's: only a Heartbeat that takes
	// the name over, once that handle's heartbeat expired, ends it.)
	must(s.Claim(ctx, "B", "u", time.Hour))(t)
	if id := must(s.StartRun(ctx, run("u", "B")))(t); id <= running {
		t.Fatalf("run ID reused after reopen: %d after %d", id, running)
	}
}
