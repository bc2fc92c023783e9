package aggregate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/destination/follow"
	"github.com/resourcesync-go/resourcesync/internal/httpclient"
	"github.com/resourcesync-go/resourcesync/storage"
)

func ev(kind, msg string) destination.Event { return destination.Event{Kind: kind, Message: msg} }

func (e Event) withError(err error) Event {
	if err != nil {
		e.Error = err.Error()
	}
	return e
}

// loop runs one Source until ctx ends: wait until held and due, run (or
// follow), schedule the next run. Losing the lease ends what runs (its
// hold context).
func (a *Aggregator) loop(ctx context.Context, st *srcState) {
	for ctx.Err() == nil {
		a.mu.Lock()
		held := st.held
		a.mu.Unlock()
		if !held && a.opt.Once {
			// Once: only what this node got in its first lease round.
			select {
			case <-ctx.Done():
				return
			case <-a.firstRound:
			}
			a.mu.Lock()
			held = st.held
			a.mu.Unlock()
			if !held {
				return
			}
		}
		if !held {
			select {
			case <-ctx.Done():
				return
			case <-st.wake:
				continue
			}
		}
		hctx, cancel := context.WithCancel(ctx)
		a.mu.Lock()
		st.cancelHold = cancel
		held = st.held // lost meanwhile?
		a.mu.Unlock()
		if held {
			a.hold(hctx, st)
		}
		cancel()
		if a.opt.Once {
			return
		}
	}
}

// hold runs st while this node holds its lease (hctx).
func (a *Aggregator) hold(hctx context.Context, st *srcState) {
	if a.opt.Once {
		a.runOnce(hctx, st, "once", nil)
		return
	}
	for hctx.Err() == nil {
		following := st.src.Follow && a.opt.CallbackBase != "" && st.src.Kind != KindSDShare
		a.mu.Lock()
		if !st.held {
			// Given back (fair share) or refused by the store: wait in
			// loop until held again, rather than retry at once.
			a.mu.Unlock()
			return
		}
		next := st.sched.Next
		if following && st.sched.Failures == 0 {
			// A follower starts at once (it catches up first); only a
			// failed start waits for its backoff.
			next = time.Time{}
		}
		a.mu.Unlock()
		if wait := next.Sub(a.opt.Now()); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-hctx.Done():
				t.Stop()
				return
			case <-st.wake:
				t.Stop()
				continue
			case <-t.C:
			}
		}
		if following {
			a.follow(hctx, st)
			if hctx.Err() == nil {
				// Could not open: runOnce scheduled the retry.
				continue
			}
			return
		}
		a.runOnce(hctx, st, "poll", nil)
	}
}

// runOnce takes a slot, records the run, runs do (nil: a pull sync of
// st) under the run's deadline, records the outcome and the next run.
func (a *Aggregator) runOnce(ctx context.Context, st *srcState, why string, do func(context.Context) (*destination.Report, error)) (*destination.Report, error) {
	a.mu.Lock()
	if !st.held {
		// The lease round gave it back (it only gives back a Source
		// neither queued nor running): another node may hold it now.
		a.mu.Unlock()
		return nil, aggstore.ErrNotHolder
	}
	due := st.sched.Next
	if now := a.opt.Now(); due.After(now) {
		// Asked before its schedule (a follower's catch-up, whose next
		// poll is an interval away): due now, not after every poll that
		// falls due meanwhile.
		due = now
	}
	st.queued = true
	a.mu.Unlock()
	var release func()
	if do == nil || why != "notification" {
		// Notifications skip the queue: they are small, and their point
		// is latency; the catch-ups and polls share the slots.
		r, err := a.slots.acquire(ctx, st.host, due)
		if err != nil {
			a.mu.Lock()
			st.queued = false
			a.mu.Unlock()
			return nil, err
		}
		release = r
	} else {
		release = func() {}
	}
	defer release()
	st.runMu.Lock()
	defer st.runMu.Unlock()
	start := a.opt.Now()
	a.mu.Lock()
	st.queued, st.running, st.lastStart = false, true, start
	rctx, cancel := context.WithTimeout(ctx, a.opt.RunTimeout)
	st.cancelRun = cancel
	a.mu.Unlock()
	defer cancel()
	mode := "sync"
	switch {
	case why == "notification":
		mode = "notification"
	case st.src.Kind == KindSDShare:
		mode = "sdshare"
	}
	run := aggstore.Run{Source: st.src.ID, Node: a.opt.Node, Mode: mode, Start: start, State: aggstore.StateRunning}
	// Not cancelled with the hold: a cancellation that came while the
	// store committed the run would leave it recorded and this node
	// unaware of it (no run-start, no outcome, interrupted only when
	// another node claims the Source). Cancelled now, the run starts
	// and ends at once, recorded as such below.
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	id, err := a.opt.Store.StartRun(sctx, run)
	scancel()
	if err != nil {
		a.mu.Lock()
		st.running = false
		if errors.Is(err, aggstore.ErrNotHolder) {
			// Another node took it between two lease rounds: stop here
			// now (hold would try again at once, and again).
			a.notHeldLocked(st)
		} else {
			// A failure like any other: counted, so that it backs off
			// (a follower that has not failed would start again at once).
			st.reason, st.lastErr = ReasonState, err.Error()
			st.sched.Failures++
			st.sched.Next = a.opt.Now().Add(a.backoff(st.src, st.sched.Failures))
		}
		a.mu.Unlock()
		return nil, err
	}
	run.ID = id
	a.mu.Lock()
	st.run = id
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		st.run = 0
		a.mu.Unlock()
	}()
	a.emit(Event{Source: st.src.ID, Event: destination.Event{Kind: EventRunStart, Mode: mode, Message: why}, Run: &run})

	var res result
	var rep *destination.Report
	switch {
	case do != nil:
		rep, err = do(rctx)
		res = fromReport(rep, err)
	case st.src.Kind == KindSDShare:
		res = a.runSDShare(rctx, st)
	default:
		rep, res = a.syncRS(rctx, st)
	}
	if res.Err != nil && rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		res.Err = fmt.Errorf("run deadline (%s) exceeded: %w", a.opt.RunTimeout, res.Err)
		res.Reason = ReasonStalled
	}
	a.mu.Lock()
	fenced := st.fenced == id
	a.mu.Unlock()
	if fenced {
		// Cancelled by its fence (fence): whatever error it ended with,
		// the cause is the lease.
		if res.Err == nil || !errors.Is(res.Err, aggstore.ErrFenced) {
			res.Err = fmt.Errorf("run %d: %w (%v)", id, aggstore.ErrFenced, res.Err)
		}
		res.Reason = ReasonFenced
	}
	end := a.opt.Now()
	if ctx.Err() != nil {
		// Stopping, or the lease was lost: the run did not end. Run
		// records this node's unfinished runs interrupted when it
		// stops; a lost lease is recorded here, unless the node that
		// took the Source over did so already.
		a.mu.Lock()
		st.running, st.cancelRun = false, nil
		stopping := a.ctx.Err() != nil
		why := "interrupted: this node lost the Source's lease"
		if a.srcs[st.src.ID] != st {
			why = "interrupted: the Source's line was changed or removed"
		}
		sched := st.sched
		a.mu.Unlock()
		if !stopping {
			run.End, run.State, run.Reason, run.Error = end, aggstore.StateFailed, ReasonState, why
			fctx, fcancel := context.WithTimeout(context.Background(), 10*time.Second)
			a.opt.Store.FinishRun(fctx, run, sched)
			fcancel()
		}
		return rep, res.Err
	}
	run.End, run.Mode = end, orDefault(res.Mode, mode)
	run.Fetched, run.Deleted, run.Failed, run.Bytes = res.Fetched, res.Deleted, res.Failed, res.Bytes
	run.Lag = res.Lag
	a.mu.Lock()
	next := st.sched
	next.Source = st.src.ID
	if res.ok() {
		run.State = aggstore.StateOK
		next.Failures, next.LastSuccess = 0, end
		next.Next = end.Add(a.jitter(a.interval(st.src)))
	} else {
		run.State = aggstore.StateFailed
		run.Reason, run.Error = res.Reason, errText(res)
		if st.redact != nil {
			// Every path (a follower's catch-ups, a failed resource's
			// URL in the note): a Source can echo its token into URLs.
			run.Error = st.redact(run.Error)
		}
		next.Failures++
		next.Next = end.Add(a.backoff(st.src, next.Failures))
	}
	next.LastRun = run.ID
	if why == "notification" || why == "subscribed" {
		// Between polls: the poll schedule stands.
		next.Next = st.sched.Next
	}
	a.mu.Unlock()
	fctx, fcancel := context.WithTimeout(context.Background(), 30*time.Second)
	ferr := a.opt.Store.FinishRun(fctx, run, next)
	a.mu.Lock()
	prune := (st.runs+1)%100 == 0
	a.mu.Unlock()
	if ferr == nil && prune {
		// Now and then, not every run: the history stays bounded.
		a.opt.Store.PruneRuns(fctx, st.src.ID, a.opt.KeepRuns)
	}
	fcancel()
	a.mu.Lock()
	st.running, st.cancelRun = false, nil
	st.lastEnd = end
	st.runs++
	st.fetched += int64(res.Fetched)
	st.deleted += int64(res.Deleted)
	st.failed += int64(res.Failed)
	st.bytes += res.Bytes
	if res.LagKnown {
		st.lag, st.lagKnown = res.Lag, true
	}
	if len(res.Graphs) > 0 {
		st.graphs = res.Graphs
	}
	if ferr == nil {
		st.sched = next
		if run.State == aggstore.StateOK {
			st.ok++
			st.reason, st.lastErr = "", ""
		} else {
			st.reason, st.lastErr = run.Reason, run.Error
		}
	} else {
		// Not recorded (the lease went to another node, or the store
		// failed): not a success here either.
		st.reason, st.lastErr = ReasonState, "run history: "+ferr.Error()
		if fenced {
			st.reason = ReasonFenced
		}
		st.sched.Failures++
		st.sched.Next = end.Add(a.backoff(st.src, st.sched.Failures))
		if errors.Is(ferr, aggstore.ErrNotRunning) || errors.Is(ferr, aggstore.ErrFenced) {
			a.notHeldLocked(st)
			// The store ended the run first (a newer tenure interrupted
			// it): the run-end event tells what the history keeps.
			run.State = aggstore.StateInterrupted
		}
	}
	a.mu.Unlock()
	a.emit(Event{Source: st.src.ID, Event: destination.Event{Kind: EventRunEnd, Mode: run.Mode, Status: run.State, Error: run.Error, Message: run.Reason}, Run: &run})
	return rep, res.Err
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// errText is a failed run's message.
func errText(r result) string {
	if r.Err != nil {
		return r.Err.Error()
	}
	switch {
	case r.Reset != "":
		return fmt.Sprintf("refused to delete %d files: %s; if the Source was replaced on purpose, add --allow-reset to the line", r.DeleteRefused, r.Reset)
	case r.DeleteRefused > 0:
		return fmt.Sprintf("refused to delete %d files (more than --max-delete allows): the Source may have been emptied; raise the line's --max-delete to apply them", r.DeleteRefused)
	case r.Note != "":
		return r.Note
	case r.Failed > 0:
		return fmt.Sprintf("%d resources failed", r.Failed)
	}
	return ""
}

// options are the Destination options of st. A DEST that is a storage
// location is opened as opt.Target (the caller closes it: closeTarget),
// its state in TargetStateDir; ctx carries the storage's options (the
// command's --s3-endpoint).
func (a *Aggregator) options(ctx context.Context, st *srcState, hc *http.Client, redact func(string) string) (destination.Options, error) {
	s := st.src
	workers := s.Workers
	if workers <= 0 {
		workers = a.opt.SourceWorkers
	}
	opt := destination.Options{
		Dest:         filepath.Join(a.opt.Root, filepath.FromSlash(s.Dest)),
		Client:       hc,
		Workers:      workers,
		NoDelete:     s.NoDelete,
		AllowReset:   s.AllowReset,
		NoDump:       s.NoDumps,
		Base:         s.BaseURL,
		AllowHosts:   s.AllowHosts,
		StallTimeout: s.Timeout,
		MinRate:      1024,
		Fence:        func(ctx context.Context) error { return a.fence(ctx, st) },
		Events: func(e destination.Event) {
			e.URI, e.Message, e.Error = redact(e.URI), redact(e.Message), redact(e.Error)
			st.rec.Handle(e)
			a.emit(Event{Source: s.ID, Event: e})
		},
	}
	if opt.StallTimeout <= 0 {
		opt.StallTimeout = 60 * time.Second
	}
	if s.MaxDelete != "" {
		l, err := destination.ParseDeleteLimit(s.MaxDelete)
		if err != nil {
			return opt, err
		}
		opt.MaxDelete = l
	}
	if DestLocation(s.Dest) {
		tg, err := storage.OpenTarget(ctx, s.Dest)
		if err != nil {
			return opt, fmt.Errorf("DEST %s: %w", s.Dest, err)
		}
		opt.Target, opt.Dest = tg, TargetStateDir(a.opt.Root, s.Dest)
	}
	switch len(s.Sets) {
	case 0:
	case 1:
		opt.Set = s.Sets[0]
	}
	include, err := s.Filter()
	if err != nil {
		return opt, err
	}
	opt.Include, opt.Force = include, s.Force
	return opt, nil
}

// closeTarget closes the Target options opened, if any.
func closeTarget(opt destination.Options) {
	if opt.Target != nil {
		opt.Target.Close()
	}
}

// destPath is what the status and the events name as st's mirror: the
// directory under the root, or the location.
func (a *Aggregator) destPath(s Source) string {
	if DestLocation(s.Dest) {
		return s.Dest
	}
	return filepath.Join(a.opt.Root, filepath.FromSlash(s.Dest))
}

// client makes st's HTTP client and the redaction of its secrets.
func (a *Aggregator) client(st *srcState) (*http.Client, func(string) string, error) {
	if a.opt.Client != nil {
		hc, err := a.opt.Client(st.src)
		return hc, func(s string) string { return s }, err
	}
	auth, err := httpclient.New(httpclient.Options{BearerTokenFile: st.src.BearerTokenFile, NetrcFile: st.src.NetrcFile, CACertFile: st.src.CACertFile, Bandwidth: a.opt.Bandwidth})
	if err != nil {
		return nil, nil, err
	}
	auth.Source(st.src.URL)
	a.mu.Lock()
	st.redact = auth.Redact
	a.mu.Unlock()
	hc, err := auth.Client(&http.Client{Transport: defaultTransport(a.opt.SourceWorkers)})
	return hc, auth.Redact, err
}

// syncRS is one pull run of a ResourceSync Source (each of its sets in
// turn when the line names several).
func (a *Aggregator) syncRS(ctx context.Context, st *srcState) (*destination.Report, result) {
	hc, redact, err := a.client(st)
	if err != nil {
		return nil, result{Err: err, Reason: ReasonConfig}
	}
	opt, err := a.options(ctx, st, hc, redact)
	if err != nil {
		return nil, result{Err: redactErr(err, redact), Reason: ReasonConfig}
	}
	defer closeTarget(opt)
	sets := st.src.Sets
	if len(sets) <= 1 {
		rep, err := destination.Sync(ctx, st.src.URL, opt)
		return rep, fromReport(rep, redactErr(err, redact))
	}
	var all *destination.Report
	for _, set := range sets {
		opt.Set = set
		rep, err := destination.Sync(ctx, st.src.URL, opt)
		if all == nil {
			all = rep
		} else if rep != nil {
			all.Sets = append(all.Sets, rep.Sets...)
		}
		if err != nil {
			return all, fromReport(all, redactErr(err, redact))
		}
	}
	return all, fromReport(all, nil)
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func redactErr(err error, redact func(string) string) error {
	if err == nil {
		return nil
	}
	if m := redact(err.Error()); m != err.Error() {
		return &redactedError{m, err}
	}
	return err
}

// fromReport sums a Destination report.
func fromReport(rep *destination.Report, err error) result {
	r := result{Err: err}
	if err != nil {
		r.Reason = classify(err)
	}
	if rep == nil {
		return r
	}
	var modes []string
	for _, s := range rep.Sets {
		r.Fetched += s.Fetched
		r.Deleted += s.Deleted
		r.Failed += s.Failed
		r.Bytes += s.Bytes
		r.DeleteRefused += s.DeleteRefused + s.ResetRefused
		if s.ResetRefused > 0 {
			r.Reset = s.Reset
		}
		if s.Mode != "" && !strings.Contains(strings.Join(modes, ","), s.Mode) {
			modes = append(modes, s.Mode)
		}
		if !s.SourceUntil.IsZero() && !s.Checkpoint.Until.IsZero() {
			lag := max(0, s.SourceUntil.Sub(s.Checkpoint.Until))
			if !r.LagKnown || lag > r.Lag {
				r.Lag, r.LagKnown = lag, true
			}
		}
	}
	r.Mode = strings.Join(modes, ",")
	if err == nil {
		switch {
		case r.DeleteRefused > 0:
			r.Reason = ReasonDeleteRefused
		case r.Failed > 0:
			r.Reason = ReasonFailures
			for _, s := range rep.Sets {
				if len(s.Failures) > 0 {
					r.Note = fmt.Sprintf("%d resources failed, e.g. %s: %s", r.Failed, s.Failures[0].URI, s.Failures[0].Error)
					break
				}
			}
		}
	}
	return r
}

// runSDShare is one run of an SDShare Source into the graph store.
func (a *Aggregator) runSDShare(ctx context.Context, st *srcState) result {
	if a.opt.GraphStore == nil {
		return result{Mode: "sdshare", Err: errors.New("an SDShare Source needs a graph store (aggregate --graph-store DIR or --sparql-update URL)"), Reason: ReasonConfig}
	}
	hc, redact, err := a.client(st)
	if err != nil {
		return result{Mode: "sdshare", Err: err, Reason: ReasonConfig}
	}
	if DestLocation(st.src.Dest) {
		return result{Mode: "sdshare", Err: fmt.Errorf("DEST %s: an SDShare Source is merged into the graph store; its DEST is a directory under --root, not a bucket", st.src.Dest), Reason: ReasonConfig}
	}
	dest := filepath.Join(a.opt.Root, filepath.FromSlash(st.src.Dest))
	store := fencedStore{a.opt.GraphStore, func(ctx context.Context) error { return a.fence(ctx, st) }}
	r := syncSDShare(ctx, st.src, dest, store, hc, func(e destination.Event) {
		e.URI, e.Message, e.Error = redact(e.URI), redact(e.Message), redact(e.Error)
		st.rec.Handle(e)
		a.emit(Event{Source: st.src.ID, Event: e})
	})
	r.Err = redactErr(r.Err, redact)
	return r
}

// follow keeps a --follow Source's mirror open and follows it (package
// destination/follow) until ctx ends or it fails to open; every catch-up
// and notification goes through runOnce.
func (a *Aggregator) follow(ctx context.Context, st *srcState) {
	hc, redact, err := a.client(st)
	var opt destination.Options
	if err == nil {
		opt, err = a.options(ctx, st, hc, redact)
	}
	defer closeTarget(opt)
	if err == nil && len(st.src.Sets) > 1 {
		err = errors.New("--follow follows one --set (or every set): give each set its own line and DEST")
	}
	if err != nil {
		a.runOnce(ctx, st, "open", func(context.Context) (*destination.Report, error) {
			return nil, &configError{err}
		})
		return
	}
	m, err := destination.Open(ctx, st.src.URL, opt)
	if err != nil {
		// A Source down at the start is recorded and backed off like a
		// poll that failed.
		if ctx.Err() == nil {
			a.runOnce(ctx, st, "open", func(context.Context) (*destination.Report, error) {
				return nil, redactErr(err, redact)
			})
		}
		return
	}
	defer m.Close()
	hub := a.opt.HubClient
	if hub == nil {
		hub = hc
	}
	mux := http.NewServeMux()
	a.mu.Lock()
	st.sched.Next = a.opt.Now().Add(a.jitter(a.interval(st.src)))
	st.mux, st.following = mux, true
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		st.mux, st.following = nil, false
		a.mu.Unlock()
	}()
	err = follow.Run(ctx, m, follow.Options{
		Mux: mux, CallbackBase: a.opt.CallbackBase + "s/" + st.cbKey + "/", Client: hub,
		PollInterval: a.interval(st.src),
		Around: func(ctx context.Context, kind, why string, do func(context.Context) (*destination.Report, error)) (*destination.Report, error) {
			if kind == "notification" {
				why = "notification"
			}
			return a.runOnce(ctx, st, why, do)
		},
	})
	if err != nil && ctx.Err() == nil {
		// It could not follow (a subscription it cannot set up): a
		// failed run, so that the retry waits for the backoff instead
		// of opening the mirror again at once.
		a.runOnce(ctx, st, "open", func(context.Context) (*destination.Report, error) {
			return nil, redactErr(err, redact)
		})
	}
}

// configError marks an error of the Source's line.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }
