package aggregate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/boltstore"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// TestAggregateManySources is issue 22's end-to-end test: one in-process
// aggregator keeps 50 healthy Sources (real Sources of package source on
// loopback, some followed through their embedded hubs, some polled) in
// step while they change at different rates, beside four faulty ones: one
// down, one that stalls, one hostile and one that empties. Once the system
// settles, every healthy mirror equals its Source byte for byte, each
// faulty one is reported with its Reason, and the faulty ones took no
// more than their share: one run at a time each, backing off, while the
// healthy ones kept running beside them. No assertion is timed: a slow
// machine only makes the test take longer (to a bounded wait).
//
// It found two faults of the engine: a notification's run could overlap
// a catch-up of the same Source in the run history (a Source's runs are
// one at a time now), and a follower's catch-up queued as if due at its
// next poll, so it starved behind polled Sources while the slots were
// busy (seen under -race).
func TestAggregateManySources(t *testing.T) {
	const (
		workers  = 4
		followed = 14 // notified through their embedded hubs
		polled   = 36
		hotEvery = 4 // every 4th Source is hot: it changes every round
		rounds   = 5
		hotPoll  = 500 * time.Millisecond
		coldPoll = 3 * time.Second
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rng := rand.New(rand.NewPCG(22, 2026))

	var healthy []*e2eSource
	var sources strings.Builder
	for i := range followed + polled {
		follow := i < followed
		name := fmt.Sprintf("polled/p%02d", i-followed)
		if follow {
			name = fmt.Sprintf("followed/f%02d", i)
		}
		s := startE2ESource(t, ctx, rng, name, 5+rng.IntN(26), follow)
		s.hot = i%hotEvery == 0
		switch {
		case follow:
			// Changes arrive by notification: the poll is only the
			// fallback, and comes after the test.
			s.opts = "--follow --poll-interval 1m"
		case s.hot:
			s.opts = "--poll-interval " + hotPoll.String()
		default:
			s.opts = "--poll-interval " + coldPoll.String()
		}
		healthy = append(healthy, s)
		fmt.Fprintf(&sources, "%s %s %s\n", s.base, s.name, s.opts)
	}
	// The faulty ones poll as often as the hot healthy ones: their runs
	// are fewer only because they back off.
	down := closedURL(t)
	stall := stallServer(t)
	hostile, otherHits := offOriginSource(t)
	// More than 100 files: the default --max-delete lets a run delete at
	// most half of such a set.
	emptied := startE2ESource(t, ctx, rng, "faulty/emptied", 120, false)
	fmt.Fprintf(&sources, "%s faulty/down --poll-interval %s\n", down, hotPoll)
	fmt.Fprintf(&sources, "%s faulty/stalled --poll-interval %s --timeout 500ms\n", stall, hotPoll)
	fmt.Fprintf(&sources, "%s faulty/hostile --poll-interval %s\n", hostile, hotPoll)
	fmt.Fprintf(&sources, "%s faulty/emptied --poll-interval %s\n", emptied.base, hotPoll)
	faulty := map[string]string{
		"faulty/down":    aggregate.ReasonUnreachable,
		"faulty/stalled": aggregate.ReasonStalled,
		"faulty/hostile": aggregate.ReasonHostile,
		"faulty/emptied": aggregate.ReasonDeleteRefused,
	}
	srcs, err := aggregate.ParseSources(strings.NewReader(sources.String()), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != len(healthy)+len(faulty) {
		t.Fatalf("%d Sources parsed", len(srcs))
	}

	root := t.TempDir()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "aggregate.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	hc, _ := testnet.Client(t)
	cln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runs := newRunLog()
	a, err := aggregate.New(aggregate.Options{
		Root: root, Store: store, StoreName: "bolt",
		Workers: workers, PerHost: 2, SourceWorkers: 4,
		Interval: time.Minute, RunTimeout: 15 * time.Second,
		// Long enough that a failing Source's backoff visibly grows
		// past its poll interval (5 s, then 10 s).
		MaxBackoff:   time.Minute,
		Client:       func(aggregate.Source) (*http.Client, error) { return hc, nil },
		CallbackBase: "http://" + cln.Addr().String() + "/",
		Events:       runs.event,
	})
	if err != nil {
		t.Fatal(err)
	}
	csrv := &httptest.Server{Listener: cln, Config: &http.Server{Handler: a.Callbacks()}}
	csrv.Start()
	defer csrv.Close()
	a.SetSources(srcs)
	began := time.Now()
	actx, stopAgg := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopAgg()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	}
	defer stop() // before the Sources and hubs close (deferred runs before t.Cleanup)

	// backoffs are the delays the scheduler chose after the down and
	// the stalled Source's failures, by the count of failures (seen in
	// the snapshots: the delays between their runs would also hold
	// the time queued for a slot).
	backoffs := map[string]map[int]time.Duration{"faulty/down": {}, "faulty/stalled": {}}
	var backoffsMu sync.Mutex
	rows := func() map[string]aggregate.SourceStatus {
		m := map[string]aggregate.SourceStatus{}
		backoffsMu.Lock()
		defer backoffsMu.Unlock()
		for _, r := range a.Snapshot().Sources {
			m[r.ID] = r
			if b, ok := backoffs[r.ID]; ok && r.Failures > 0 {
				b[r.Failures] = r.Next.Sub(r.LastEnd)
			}
		}
		return m
	}
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for actx.Err() == nil {
			rows()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	dump := func() string {
		b, _ := json.MarshalIndent(a.Snapshot(), "", "  ")
		return string(b)
	}
	// settle waits until every healthy mirror equals its Source (and its
	// last run succeeded, and a followed one gets notifications), and
	// until cond holds.
	settle := func(what string, cond func(map[string]aggregate.SourceStatus) string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		lastLog := time.Now()
		for {
			var behind []string
			rs := rows()
			for _, s := range healthy {
				r := rs[s.name]
				switch d := treeDiff(tree(t, s.dir, false), tree(t, filepath.Join(root, s.name), true)); {
				case d != "":
					behind = append(behind, s.name+": "+d)
				case r.Succeeded == 0:
					behind = append(behind, fmt.Sprintf("%s: no run succeeded yet (%s, %d runs)", s.name, r.State, r.Runs))
				case r.LastError != "":
					behind = append(behind, fmt.Sprintf("%s: last run failed (%s): %s", s.name, r.Reason, r.LastError))
				case s.follow && !r.Notifications:
					behind = append(behind, s.name+": not receiving notifications")
				}
			}
			if c := cond(rs); c != "" {
				behind = append(behind, c)
			}
			if len(behind) == 0 {
				return
			}
			if testing.Verbose() && time.Since(lastLog) > 2*time.Second {
				lastLog = time.Now()
				t.Logf("%s: waiting for %d, e.g. %s", what, len(behind), behind[0])
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not settled:\n%s\nsnapshot:\n%s", what, strings.Join(behind, "\n"), dump())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Baseline: every healthy mirror complete and every follower
	// subscribed; the emptied Source mirrored too (before it empties).
	emptiedTree := tree(t, emptied.dir, false)
	settle("baseline", func(rs map[string]aggregate.SourceStatus) string {
		if d := treeDiff(emptiedTree, tree(t, filepath.Join(root, emptied.name), true)); d != "" {
			return "faulty/emptied baseline: " + d
		}
		return ""
	})

	t.Logf("baseline of %d Sources settled after %v", len(srcs), time.Since(began).Round(time.Millisecond))

	// The emptied Source loses every file; the Source itself publishes
	// that (AllowEmpty), the aggregator must refuse to apply it.
	for _, p := range sortedKeys(emptiedTree) {
		if err := removeFile(emptied.dir, p); err != nil {
			t.Fatal(err)
		}
	}
	emptied.update(t, ctx)

	// Rounds of changes: the hot Sources change every round, the others
	// now and then.
	changed := map[string]bool{}
	for round := range rounds {
		for i, s := range healthy {
			if s.hot || (i+round)%13 == 0 {
				s.change(t, ctx, rng)
				changed[s.name] = true
			}
		}
		time.Sleep(hotPoll + 200*time.Millisecond)
	}

	// Settled: every healthy mirror caught up; each faulty Source
	// reported with its reason after at least two runs (so that its
	// backoff can be seen).
	settle("after the changes", func(rs map[string]aggregate.SourceStatus) string {
		var bad []string
		for id, reason := range faulty {
			r := rs[id]
			if r.Reason != reason || r.LastError == "" || r.Runs-r.Succeeded < 2 {
				bad = append(bad, fmt.Sprintf("%s: reason %q (want %q), %d runs, %d succeeded, error %q", id, r.Reason, reason, r.Runs, r.Succeeded, r.LastError))
			}
		}
		return strings.Join(bad, "\n")
	})
	final := rows()
	t.Logf("settled after %v", time.Since(began).Round(time.Millisecond))
	stop()
	<-sampled

	// The faulty ones, reported with their reasons.
	for id, reason := range faulty {
		r := final[id]
		if r.Reason != reason || r.LastError == "" || r.Failures < 2 {
			t.Errorf("%s: reason %q, %d failures, error %q; want reason %q after failures", id, r.Reason, r.Failures, r.LastError, reason)
		}
	}
	if n := otherHits(); n != 0 {
		t.Errorf("the hostile Source's other authority was requested %d times", n)
	}
	// The emptied Source's mirror keeps every file.
	if d := treeDiff(emptiedTree, tree(t, filepath.Join(root, emptied.name), true)); d != "" {
		t.Errorf("faulty/emptied: the mirror was wiped: %s", d)
	}
	if r := final[emptied.name]; r.Succeeded == 0 || r.Deleted != 0 {
		t.Errorf("faulty/emptied: %d runs succeeded (the baseline should have), %d files deleted", r.Succeeded, r.Deleted)
	}

	// Notifications carried the followed Sources' changes (their poll
	// interval is longer than the test).
	runs.mu.Lock()
	for _, s := range healthy {
		if s.follow && changed[s.name] && runs.notifications[s.name] == 0 {
			t.Errorf("%s changed but no notification was applied", s.name)
		}
	}
	maxSlotted, maxPer := runs.maxSlotted, runs.maxPerSource
	runs.mu.Unlock()

	// Fair shares. The worker budget held: never more runs taking a slot
	// than Workers, and no Source ever ran twice at once.
	if maxSlotted > workers {
		t.Errorf("%d runs held a worker slot at once, more than the %d workers", maxSlotted, workers)
	}
	for id, n := range maxPer {
		if n > 1 {
			t.Errorf("%s: %d runs at once", id, n)
		}
	}
	history := func(id string) []aggstore.Run {
		rs, err := store.Runs(context.Background(), id, 0)
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(rs, func(i, k int) bool { return rs[i].ID < rs[k].ID })
		return rs
	}
	scheds, err := store.Schedules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	schedOf := map[string]aggstore.Schedule{}
	for _, s := range scheds {
		schedOf[s.Source] = s
	}
	var all []aggstore.Run
	fewestHot := -1
	for _, s := range healthy {
		h := history(s.name)
		all = append(all, h...)
		if s.hot && !s.follow && (fewestHot < 0 || len(h) < fewestHot) {
			fewestHot = len(h)
		}
	}
	for _, id := range []string{"faulty/down", "faulty/stalled"} {
		h := history(id)
		// One run at a time, each failed with the Source's reason
		// (the last one may have been interrupted by the stop).
		var failed []aggstore.Run
		for i, r := range h {
			if i > 0 && r.Start.Before(h[i-1].End) {
				t.Errorf("%s: run %d started before run %d ended", id, r.ID, h[i-1].ID)
			}
			switch r.State {
			case aggstore.StateFailed:
				if r.Reason != faulty[id] {
					t.Errorf("%s: run %d failed with reason %q: %s", id, r.ID, r.Reason, r.Error)
				}
				failed = append(failed, r)
			case aggstore.StateInterrupted:
			default:
				t.Errorf("%s: run %d is %s", id, r.ID, r.State)
			}
		}
		// It backed off: fewer runs than a healthy Source polled as
		// often, and the delay the scheduler chose grew with each
		// failure, beyond the poll interval.
		if len(h) >= fewestHot {
			t.Errorf("%s: %d runs, a healthy Source with the same poll interval had only %d: no backoff", id, len(h), fewestHot)
		}
		if len(failed) < 2 {
			t.Errorf("%s: %d failed runs", id, len(failed))
			continue
		}
		ns := sortedInts(backoffs[id])
		if len(ns) < 2 {
			t.Errorf("%s: backoff seen after %v failures only", id, ns)
		}
		for i, n := range ns {
			d := backoffs[id][n]
			if d <= hotPoll || (i > 0 && d <= backoffs[id][ns[i-1]]) {
				t.Errorf("%s: backoff after %d failures %v (after each: %v): want it beyond the %v poll interval, growing", id, n, d, backoffs[id], hotPoll)
			}
		}
		t.Logf("%s: %d runs, backoff after n failures %v; healthy hot Sources had at least %d runs", id, len(h), backoffs[id], fewestHot)
		if id != "faulty/stalled" {
			continue
		}
		// It took no more than its slot: while each of its stalled runs
		// held one, the healthy Sources' runs went on beside it.
		for _, r := range failed {
			beside := 0
			for _, o := range all {
				if o.State == aggstore.StateOK && o.End.After(r.Start) && !o.End.After(r.End) {
					beside++
				}
			}
			if beside == 0 {
				t.Errorf("%s: no healthy run ended during its run %d (%v to %v)", id, r.ID, r.Start, r.End)
			}
		}
	}
}
