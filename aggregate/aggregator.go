package aggregate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/destination/status"
	"github.com/resourcesync-go/resourcesync/internal/httpclient"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// Options configure an Aggregator. Root and Store are required.
type Options struct {
	// Root is the directory every Source's DEST is relative to.
	Root string
	// Store keeps the schedule, run history and leases; StoreName is
	// what the status shows of it (its URL, password hidden).
	Store     aggstore.Store
	StoreName string
	// Node names this process in a shared store (default "local");
	// LeaseTTL is how long its leases live without renewal (default 30s):
	// a killed node's Sources move to the others within it.
	Node     string
	LeaseTTL time.Duration
	// Workers is the number of Sources run at once (default 4), PerHost
	// the most of them on one host (default 2), SourceWorkers the
	// concurrent downloads within one run (default 4; a line's --workers
	// overrides it).
	Workers, PerHost, SourceWorkers int
	// Interval is the default time between polls (default 1h), Jitter
	// the fraction of it a run may be moved by (default 0.1), RunTimeout
	// a run's deadline (default 1h), MaxBackoff the longest delay after
	// failures (default: the Source's interval).
	Interval   time.Duration
	Jitter     float64
	RunTimeout time.Duration
	MaxBackoff time.Duration
	// Client makes the HTTP client of one Source (credentials from its
	// files); default: the project's client (internal/httpclient) with
	// the Source's files. Tests give one that dials loopback only.
	Client func(s Source) (*http.Client, error)
	// Bandwidth paces the response bodies of every Source's default
	// client, all Sources together (--bwlimit; nil: no limit).
	Bandwidth *httpclient.Bandwidth
	// CallbackBase is the public URL at which Callbacks() is served (as
	// the hubs reach it); "" makes --follow Sources poll only. HubClient
	// makes the subscription requests (default: the Source's client).
	CallbackBase string
	HubClient    *http.Client
	// GraphStore receives the SDShare Sources' collections, one named
	// graph each (nil: SDShare Sources fail with a config error).
	GraphStore graphstore.Store
	// Events, if set, receives every event (safe for concurrent use).
	Events func(Event)
	// KeepRuns bounds each Source's run history (default 1000): older
	// finished runs are pruned as new ones end.
	KeepRuns int
	// Once runs each Source once (a --follow line: one poll) and makes
	// Run return when all have run (resourcesync aggregate --once, for
	// cron); with a shared store, only the Sources this node gets.
	Once bool
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Aggregator runs the Sources it is given.
type Aggregator struct {
	opt     Options
	slots   *slots
	started time.Time

	mu      sync.Mutex
	srcs    map[string]*srcState
	ctx     context.Context // Run's, nil until Run starts
	wg      sync.WaitGroup
	loadErr string
	// firstRound is closed after the first lease round.
	firstRound chan struct{}
	// displace stops Run when another process took this node's name
	// over (cause: aggstore.ErrNodeInUse).
	displace context.CancelCauseFunc
	// history of removed Sources' loops still ending, by ID: a Source
	// added back waits for the old loop to release DEST.
	ending map[string]chan struct{}
}

// srcState is one Source's loop and what the status shows of it. The
// fields below mu are guarded by Aggregator.mu.
type srcState struct {
	src    Source
	host   string
	cbKey  string
	rec    *status.Recorder
	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
	// runMu makes the Source's runs one at a time: a notification
	// (which takes no slot) waits for a catch-up in progress, so the
	// run history never shows two runs of one Source at once.
	runMu sync.Mutex

	held       bool // this node holds the lease
	running    bool
	following  bool
	queued     bool
	sched      aggstore.Schedule
	lastStart  time.Time
	lastEnd    time.Time
	reason     string
	lastErr    string
	runs, ok   int
	fetched    int64
	deleted    int64
	failed     int64
	bytes      int64
	lag        time.Duration
	lagKnown   bool
	graphs     []string
	mux        http.Handler // the follower's callbacks
	cancelRun  context.CancelFunc
	cancelHold context.CancelFunc
	// run is the ID of the run under way (0: none), which the
	// Destination's writes are fenced to (fence); fenced is the last
	// run the store fenced out.
	run, fenced int64
	// leaseUntil is when this node's lease on the Source ends at the
	// earliest, by this process's monotonic clock: the start of the
	// last claim that held it plus LeaseTTL.
	leaseUntil time.Time
	// redact hides the Source's secrets in what its runs record (set
	// by client; nil before its first run).
	redact func(string) string
}

// New checks opt and makes an Aggregator; Run starts it.
func New(opt Options) (*Aggregator, error) {
	if opt.Root == "" || opt.Store == nil {
		return nil, errors.New("aggregate: Root and Store are required")
	}
	if opt.Node == "" {
		opt.Node = "local"
	}
	if opt.LeaseTTL <= 0 {
		opt.LeaseTTL = 30 * time.Second
	}
	if opt.Workers <= 0 {
		opt.Workers = 4
	}
	if opt.PerHost <= 0 {
		opt.PerHost = 2
	}
	if opt.SourceWorkers <= 0 {
		opt.SourceWorkers = 4
	}
	if opt.Interval <= 0 {
		opt.Interval = time.Hour
	}
	if opt.Jitter < 0 || opt.Jitter > 1 {
		return nil, errors.New("aggregate: Jitter must be between 0 and 1")
	}
	if opt.RunTimeout <= 0 {
		opt.RunTimeout = time.Hour
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.KeepRuns <= 0 {
		opt.KeepRuns = 1000
	}
	if opt.CallbackBase != "" && !strings.HasSuffix(opt.CallbackBase, "/") {
		opt.CallbackBase += "/"
	}
	return &Aggregator{opt: opt, slots: newSlots(opt.Workers, opt.PerHost), started: opt.Now(),
		srcs: map[string]*srcState{}, ending: map[string]chan struct{}{}, firstRound: make(chan struct{})}, nil
}

// SetSources replaces the Sources (a reload of the sources file): new
// ones are scheduled, removed ones stop (their mirrors stay), changed
// ones restart with their new options (their totals kept).
func (a *Aggregator) SetSources(ss []Source) {
	// The events go out after a.mu is released: Options.Events may
	// call back (Snapshot) or block on its output.
	for _, e := range a.setSources(ss) {
		a.emit(e)
	}
}

func (a *Aggregator) setSources(ss []Source) (evs []Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loadErr = ""
	want := map[string]Source{}
	for _, s := range ss {
		want[s.ID] = s
	}
	for id, st := range a.srcs {
		n, ok := want[id]
		if ok && sameSource(n, st.src) {
			// Only moved in the file: st.src stays as it is (its loop
			// reads it without a.mu; nothing shows Line).
			continue
		}
		a.stopLocked(st)
		if !ok {
			delete(a.srcs, id)
			evs = append(evs, Event{Source: id, Event: ev(EventSourceRemoved, "removed from the sources; its mirror stays")})
			if a.ctx != nil && a.ctx.Err() == nil && st.done != nil {
				// In wg: Run returns after it (the store is still
				// open); Add is safe here, see Run's barrier.
				a.wg.Add(1)
				go func(id string, done chan struct{}) {
					defer a.wg.Done()
					a.forget(id, done)
				}(id, st.done)
			}
		} else {
			// Changed: a new loop with the new options, after the old
			// one released DEST; the totals stay.
			nst := a.newState(n)
			nst.copyTotals(st)
			a.srcs[id] = nst
			a.startLocked(nst, st.done)
		}
	}
	for _, s := range ss {
		if _, ok := a.srcs[s.ID]; ok {
			continue
		}
		st := a.newState(s)
		a.srcs[s.ID] = st
		if a.ctx != nil { // a reload, not the start
			evs = append(evs, Event{Source: s.ID, Event: ev(EventSourceAdded, s.URL)})
		}
		a.startLocked(st, a.ending[s.ID])
	}
	return evs
}

// sameSource compares two lines but for where they are and whether the
// URL was written with its scheme.
func sameSource(x, y Source) bool {
	x.Line, y.Line = 0, 0
	x.Typed, y.Typed = "", ""
	return reflect.DeepEqual(x, y)
}

func (st *srcState) copyTotals(o *srcState) {
	st.rec = o.rec
	st.sched, st.lastStart, st.lastEnd, st.reason, st.lastErr = o.sched, o.lastStart, o.lastEnd, o.reason, o.lastErr
	st.runs, st.ok, st.fetched, st.deleted, st.failed, st.bytes = o.runs, o.ok, o.fetched, o.deleted, o.failed, o.bytes
	st.lag, st.lagKnown, st.graphs = o.lag, o.lagKnown, o.graphs
	st.held = o.held
}

// forget drops a removed Source's schedule and lease once its loop ended
// (its run history stays).
func (a *Aggregator) forget(id string, done chan struct{}) {
	<-done
	a.mu.Lock()
	_, back := a.srcs[id]
	a.mu.Unlock()
	if back {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a.opt.Store.Forget(ctx, id)
}

// SetSourcesError records that a reload failed (the Sources stay).
func (a *Aggregator) SetSourcesError(err error) {
	a.mu.Lock()
	a.loadErr = err.Error()
	a.mu.Unlock()
	a.emit(Event{Event: ev(EventSourcesError, "")}.withError(err))
}

func (a *Aggregator) newState(s Source) *srcState {
	host := s.URL
	if u, err := url.Parse(s.URL); err == nil {
		host = strings.ToLower(u.Host)
	}
	sum := sha256.Sum256([]byte(s.ID))
	st := &srcState{src: s, host: host, cbKey: hex.EncodeToString(sum[:8]), wake: make(chan struct{}, 1)}
	command := "aggregate"
	if s.Follow {
		command += " (--follow)"
	}
	st.rec = status.New(status.Options{Source: s.URL, Dest: a.destPath(s), Command: command, Now: a.opt.Now})
	return st
}

// startLocked starts st's loop (once Run has started), after after (the
// previous loop of the same DEST) has ended.
func (a *Aggregator) startLocked(st *srcState, after chan struct{}) {
	if a.ctx == nil || a.ctx.Err() != nil {
		return // Run starts it, or has stopped
	}
	ctx, cancel := context.WithCancel(a.ctx)
	st.cancel, st.done = cancel, make(chan struct{})
	a.ending[st.src.ID] = st.done
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(st.done)
		if after != nil {
			// Even when stopped meanwhile: done (a newer loop's after)
			// must not close before the previous loop released DEST.
			<-after
		}
		a.loop(ctx, st)
	}()
}

func (a *Aggregator) stopLocked(st *srcState) {
	if st.cancel != nil {
		st.cancel()
	}
}

// Run runs the Sources until ctx ends; then it stops every run, leaves
// the hubs (unsubscribes), releases its leases and returns.
func (a *Aggregator) Run(ctx context.Context) error {
	if err := a.join(ctx); err != nil {
		return err
	}
	// Another process taking this node's name over (this one paused
	// past its heartbeat) stops everything here: leaseRound's cause.
	ctx, a.displace = context.WithCancelCause(ctx)
	defer a.displace(nil)
	// Runs this node left running when it was killed never ended.
	if n, err := a.opt.Store.InterruptRuns(ctx, a.opt.Node, a.opt.Now()); err != nil {
		return fmt.Errorf("aggregate: store: %w", err)
	} else if n > 0 {
		a.emit(Event{Event: ev(EventLease, fmt.Sprintf("%d runs of node %s were interrupted (the process was killed) and are recorded so", n, a.opt.Node))})
	}
	scheds, err := a.opt.Store.Schedules(ctx)
	if err != nil {
		return fmt.Errorf("aggregate: store: %w", err)
	}
	byID := map[string]aggstore.Schedule{}
	for _, s := range scheds {
		byID[s.Source] = s
	}
	a.mu.Lock()
	a.ctx = ctx
	for id, st := range a.srcs {
		if s, ok := byID[id]; ok {
			st.sched = s
		}
		a.startLocked(st, nil)
	}
	a.mu.Unlock()

	lctx, stopLeases := context.WithCancel(ctx)
	defer stopLeases()
	leasesDone := make(chan struct{})
	go func() {
		defer close(leasesDone)
		a.keepLeases(lctx)
	}()
	if a.opt.Once {
		a.wg.Wait()
	} else {
		<-ctx.Done()
		a.mu.Lock() // no loop starts after this
		a.mu.Unlock()
		a.wg.Wait()
	}
	stopLeases()
	<-leasesDone
	if cause := context.Cause(ctx); errors.Is(cause, aggstore.ErrNodeInUse) {
		// The name's runs and leases are the other process's now.
		return fmt.Errorf("aggregate: stopped: %w", cause)
	}
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The runs Ctrl-C or SIGTERM stopped did not end.
	a.opt.Store.InterruptRuns(rctx, a.opt.Node, a.opt.Now())
	a.opt.Store.Release(rctx, a.opt.Node)
	// Leave: a heartbeat that expires at once, so that the other nodes
	// count one node fewer and take the released Sources at their next
	// round, not once this node's heartbeat expires (LeaseTTL).
	a.opt.Store.Heartbeat(rctx, a.opt.Node, time.Nanosecond)
	return nil
}

// join makes this process the node Options.Node in the store: its first
// heartbeat. While another process's heartbeat as that node lives, it
// waits, for at most the lease time and one more round: a process killed
// without stopping leaves its heartbeat that long, one alive renews it
// every round. Then ErrNodeInUse: two processes must not share a name,
// whose leases (and their fencing) would be one.
func (a *Aggregator) join(ctx context.Context) error {
	ttl := a.opt.LeaseTTL
	deadline := time.Now().Add(ttl + ttl/3 + time.Second)
	said := false
	for {
		_, err := a.opt.Store.Heartbeat(ctx, a.opt.Node, ttl)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, aggstore.ErrNodeInUse):
			return fmt.Errorf("aggregate: store: %w", err)
		case time.Now().After(deadline):
			return fmt.Errorf("aggregate: node %q: another live process sharing this store runs as it (it renewed its heartbeat within the last %s): %w", a.opt.Node, ttl, err)
		}
		if !said {
			said = true
			a.emit(Event{Event: ev(EventLease, fmt.Sprintf("node %s: another process heartbeats as %s; waiting up to %s for its heartbeat to expire (a process killed without stopping leaves it for the lease time)", a.opt.Node, a.opt.Node, time.Until(deadline).Round(time.Second)))})
		}
		t := time.NewTimer(max(ttl/10, 50*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Callbacks is the handler of the notification callbacks of every
// followed Source; serve it at Options.CallbackBase. A Source's callbacks
// are at s/<key>/<set>, key a hash of its ID (stable across restarts).
func (a *Aggregator) Callbacks() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if base, err := url.Parse(a.opt.CallbackBase); err == nil {
			p = strings.TrimPrefix(p, strings.TrimSuffix(base.Path, "/"))
		}
		rest, ok := strings.CutPrefix(p, "/s/")
		key, tail, ok2 := strings.Cut(rest, "/")
		if !ok || !ok2 {
			http.NotFound(w, r)
			return
		}
		var h http.Handler
		a.mu.Lock()
		for _, st := range a.srcs {
			if st.cbKey == key {
				h = st.mux
			}
		}
		a.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + tail
		r2.URL.RawPath = ""
		h.ServeHTTP(w, r2)
	})
}

// Snapshot returns the aggregator's view of every Source.
func (a *Aggregator) Snapshot() Snapshot {
	busy, _ := a.slots.load()
	a.mu.Lock()
	sts := make([]*srcState, 0, len(a.srcs))
	for _, st := range a.srcs {
		sts = append(sts, st)
	}
	snap := Snapshot{Node: a.opt.Node, Store: a.opt.StoreName, Started: a.started, Now: a.opt.Now(),
		Workers: a.opt.Workers, Busy: busy, SourcesError: a.loadErr}
	rows := make([]SourceStatus, len(sts))
	recs := make([]*status.Recorder, len(sts))
	for i, st := range sts {
		rows[i] = a.rowLocked(st)
		recs[i] = st.rec
	}
	a.mu.Unlock()
	for i, rec := range recs {
		rs := rec.Snapshot()
		for _, set := range rs.Sets {
			if set.Follow == "notifications" {
				rows[i].Notifications = true
			}
			if set.LagKnown && (!rows[i].LagKnown || set.Lag > rows[i].Lag) {
				rows[i].Lag, rows[i].LagKnown = set.Lag, true
			}
		}
	}
	sort.Slice(rows, func(i, k int) bool { return rows[i].ID < rows[k].ID })
	snap.Sources = rows
	return snap
}

func (a *Aggregator) rowLocked(st *srcState) SourceStatus {
	r := SourceStatus{ID: st.src.ID, URL: status.Redact(st.src.URL), Dest: st.src.Dest, Kind: st.src.Kind,
		Follow: st.src.Follow, LastStart: st.lastStart, LastEnd: st.lastEnd, LastSuccess: st.sched.LastSuccess,
		Next: st.sched.Next, Failures: st.sched.Failures, Reason: st.reason, LastError: st.lastErr,
		Runs: st.runs, Succeeded: st.ok, Fetched: st.fetched, Deleted: st.deleted, Failed: st.failed, Bytes: st.bytes,
		Lag: st.lag, LagKnown: st.lagKnown, Graphs: st.graphs}
	if r.Kind == "" {
		r.Kind = KindResourceSync
	}
	switch {
	case !st.held:
		r.State = StateElsewhere
	case st.running:
		r.State = StateRunning
	case st.queued:
		r.State = StateQueued
	case st.following:
		r.State = StateFollowing
	case st.sched.Failures > 0:
		r.State = StateBackoff
	default:
		r.State = StateScheduled
	}
	if st.held {
		r.Node = a.opt.Node
	}
	return r
}

// Detail is the status page of one Source (the page sync --status-addr
// serves, for that Source's events), nil for an unknown ID.
func (a *Aggregator) Detail(id string) http.Handler {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st, ok := a.srcs[id]; ok {
		return st.rec.Handler()
	}
	return nil
}

func (a *Aggregator) emit(e Event) {
	if e.Time.IsZero() {
		e.Time = a.opt.Now()
	}
	if a.opt.Events != nil {
		a.opt.Events(e)
	}
}

// jitter moves d by up to ±Jitter of it.
func (a *Aggregator) jitter(d time.Duration) time.Duration {
	if a.opt.Jitter == 0 || d <= 0 {
		return d
	}
	f := 1 + a.opt.Jitter*(2*rand.Float64()-1)
	return time.Duration(float64(d) * f)
}

// interval is s's time between polls.
func (a *Aggregator) interval(s Source) time.Duration {
	if s.Interval > 0 {
		return s.Interval
	}
	return a.opt.Interval
}

// backoff is the delay after n consecutive failures: 5 s doubling, at
// most MaxBackoff (default: the Source's interval).
func (a *Aggregator) backoff(s Source, n int) time.Duration {
	limit := a.opt.MaxBackoff
	if limit <= 0 {
		limit = a.interval(s)
	}
	d := 5 * time.Second
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return a.jitter(min(d, limit))
}
