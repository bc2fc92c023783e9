// Package follow keeps a Destination in step with its Source as changes
// happen: it subscribes to each set's change-notification channel at the
// Source's WebSub hub and applies every notification through the same
// planner and fetcher as a pull sync (destination.Mirror.Apply), and it
// falls back to the Change Lists (destination.Mirror.Sync) after a gap in
// from/until, at start, after (re)subscribing, and at an interval while a
// hub is unreachable. Duplicate and out-of-order notifications are
// harmless: Apply ignores what the checkpoint already covers.
package follow

import (
	"context"
	"errors"
	"fmt"
	"github.com/resourcesync-go/resourcesync/internal/redact"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/websub/subscriber"
)

// Options configure Run.
type Options struct {
	// Mux is where the callbacks are mounted, at "/<set>" below the path
	// of CallbackBase; the caller serves it.
	Mux *http.ServeMux
	// CallbackBase is the public URL of Mux's root as the hub reaches it.
	CallbackBase string
	// Client subscribes (not the Mirror's fetching client).
	Client *http.Client
	// Push: a set whose Capability List offers the live push over
	// WebSocket (package wspush) is followed through it instead of
	// WebSub: no callback, so a mirror behind NAT gets push. Set it when
	// no public callback URL is given. Mux and CallbackBase are then
	// needed only for the sets without it.
	Push bool
	// PollInterval polls the Change Lists while a hub is unreachable (and
	// every tenth interval anyway); default 1 minute.
	PollInterval time.Duration
	// Lease asked for (default 24h).
	Lease time.Duration
	// Say, if set, receives one line per thing that happened.
	Say func(format string, args ...any)
	// OnApplied, if set, is called after each applied notification.
	OnApplied func(set string, n *subscriber.Notification, sr *destination.SetReport)
	// Around, if set, runs every catch-up sync (kind "sync", why: start,
	// poll, subscribed, gap, ...) and every notification's apply (kind
	// "notification") by calling do, which performs it and returns its
	// report (a notification's: one set). The aggregator uses it to give
	// each a worker, a deadline and a line in its run history.
	Around func(ctx context.Context, kind, why string, do func(context.Context) (*destination.Report, error)) (*destination.Report, error)
	Logger *slog.Logger
}

type follower struct {
	m       *destination.Mirror
	opt     Options
	catchup chan string
	mu      sync.Mutex
	down    map[string]bool
	subs    []followed
	// reported is the subscription state last emitted per set.
	reported map[string]destination.Event
	// refusedBy names the sets whose hub refused the subscription.
	refusedBy map[string]bool
	// retry: the last catch-up failed (or left failures): the next tick
	// tries again, whether the hub is up or not.
	retry bool
}

// refusalHint says how to get a refused callback accepted.
const refusalHint = "a hub calls back only public addresses unless it allows private ones: " +
	"start the hub with --allow-private-callbacks (resourcesync hub, or serve for its embedded hub), " +
	"or give --callback-url a public URL that reaches --listen"

// refused: the hub refused the subscription itself, not down.
func refused(err error) bool { return subscriber.Refused(err) }

type followed struct {
	set, hub string
	sub      *subscriber.Subscriber
}

// report emits the set's subscription state (an EventSubscription) when
// it differs from the one last emitted: notifications and the lease's
// end while the subscription is active, else polling and why.
func (f *follower) report(set, hub string, sub *subscriber.Subscriber, why error) {
	ev := destination.Event{Kind: destination.EventSubscription, Set: set, URI: hub, Status: destination.SubPolling}
	if st := sub.State(); st.Active {
		ev.Status, ev.Expires = destination.SubNotifications, st.Expires
	} else if why != nil && refused(why) {
		ev.Message = "hub refused the callback: " + why.Error()
	} else if why != nil {
		ev.Message = "hub unreachable: " + why.Error()
	} else if st.Denied {
		ev.Message = "subscription denied: " + st.Reason
	} else {
		ev.Message = "not subscribed"
	}
	f.mu.Lock()
	last, ok := f.reported[set]
	same := ok && last.Status == ev.Status && last.Expires.Equal(ev.Expires) && last.Message == ev.Message
	if !same {
		f.reported[set] = ev
	}
	f.mu.Unlock()
	if !same {
		f.m.Emit(ev)
	}
}

func (f *follower) say(format string, args ...any) {
	if f.opt.Say != nil {
		f.opt.Say(format, args...)
	}
}

func (f *follower) requestCatchup(why string) {
	select {
	case f.catchup <- why:
	default:
	}
}

// around runs do through Options.Around, when set.
func (f *follower) around(ctx context.Context, kind, why string, do func(context.Context) (*destination.Report, error)) (*destination.Report, error) {
	if f.opt.Around == nil {
		return do(ctx)
	}
	return f.opt.Around(ctx, kind, why, do)
}

// sync catches up; each of then, if any, sees the report of a sync that
// did not fail.
func (f *follower) sync(ctx context.Context, why string, then ...func(*destination.Report)) {
	rep, err := f.around(ctx, "sync", why, f.m.Sync)
	failed := err != nil
	if rep != nil {
		for _, s := range rep.Sets {
			failed = failed || s.Failed > 0
		}
	}
	f.mu.Lock()
	f.retry = failed
	f.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			f.say("catch-up (%s) failed: %v", why, err)
		}
		return
	}
	for _, s := range rep.Sets {
		if s.Fetched+s.Deleted+s.Failed+s.Kept+s.DeleteRefused > 0 || s.Gap != "" {
			f.say("catch-up (%s): set %s: %s", why, s.Set, s.Summary(false))
		}
	}
	for _, fn := range then {
		if rep != nil {
			fn(rep)
		}
	}
}

func (f *follower) apply(set string) func(context.Context, subscriber.Notification) error {
	return func(ctx context.Context, n subscriber.Notification) error {
		entries := make([]*rs.Entry, len(n.Entries))
		for i := range n.Entries {
			entries[i] = &n.Entries[i]
		}
		var sr *destination.SetReport
		_, err := f.around(ctx, "notification", set, func(ctx context.Context) (*destination.Report, error) {
			var err error
			sr, err = f.m.Apply(ctx, set, &n.Head, entries)
			if sr == nil {
				return nil, err
			}
			return &destination.Report{Base: f.m.Base(), Sets: []*destination.SetReport{sr}}, err
		})
		switch {
		case errors.Is(err, destination.ErrNotContiguous):
			f.say("notification on %s: %v: catching up from the Change Lists", set, err)
			f.requestCatchup("gap in notifications")
			return nil
		case err != nil:
			f.say("notification on %s: %v", set, err)
			f.requestCatchup("notification failed")
			return err
		}
		if sr == nil {
			return nil // Around did not apply it (and said nothing): nothing to tell
		}
		if f.opt.OnApplied != nil {
			f.opt.OnApplied(set, &n, sr)
		}
		if sr.Fetched+sr.Deleted+sr.Failed+sr.Kept+sr.DeleteRefused > 0 {
			f.say("notification on %s (%s after delivery): %s", set, time.Since(n.Received).Round(time.Millisecond), sr.Summary(false))
		}
		if sr.Failed > 0 {
			f.requestCatchup("failures")
		}
		return nil
	}
}

// Run catches up, subscribes and applies notifications until ctx ends;
// then it unsubscribes. Sets without a change-notification channel are
// polled.
func Run(ctx context.Context, m *destination.Mirror, opt Options) error {
	if opt.PollInterval <= 0 {
		opt.PollInterval = time.Minute
	}
	if opt.Lease <= 0 {
		opt.Lease = 24 * time.Hour
	}
	needHub := false
	for _, s := range m.Sets() {
		if s.ChangeNotification != "" && s.ChangeNotificationHub != "" && !(opt.Push && pushEndpoint(s) != "") {
			needHub = true
		}
	}
	if needHub && (opt.Mux == nil || opt.CallbackBase == "") {
		return errors.New("follow: Mux and CallbackBase are required")
	}
	cb := opt.CallbackBase
	if !strings.HasSuffix(cb, "/") {
		cb += "/"
	}
	f := &follower{m: m, opt: opt, catchup: make(chan string, 1), down: map[string]bool{}, reported: map[string]destination.Event{}, refusedBy: map[string]bool{}}
	f.sync(ctx, "start")

	var subs []*subscriber.Subscriber
	var wg sync.WaitGroup
	runCtx, stopRuns := context.WithCancel(ctx)
	defer stopRuns()
	for _, s := range m.Sets() {
		if ep := pushEndpoint(s); opt.Push && ep != "" {
			f.mu.Lock()
			f.down[s.Name] = true // until connected
			f.mu.Unlock()
			m.Emit(destination.Event{Kind: destination.EventSubscription, Set: s.Name, Status: destination.SubPolling, URI: ep,
				Message: "connecting to the live push"})
			wg.Add(1)
			go func() {
				defer wg.Done()
				f.pushLoop(runCtx, s, ep)
			}()
			continue
		}
		if s.ChangeNotification == "" || s.ChangeNotificationHub == "" {
			what := "its Change Lists"
			if s.Feed != "" {
				what = "its feed " + redact.String(s.Feed)
			}
			f.say("set %s offers no change notifications: polling %s every %s", s.Name, what, opt.PollInterval)
			// Under the lock: a push loop started for an earlier set
			// writes the map from its own goroutine.
			f.mu.Lock()
			f.down[s.Name] = true
			f.mu.Unlock()
			m.Emit(destination.Event{Kind: destination.EventSubscription, Set: s.Name, Status: destination.SubPolling,
				Message: "the set offers no change notifications"})
			continue
		}
		name, topic, hubURL := s.Name, s.ChangeNotification, s.ChangeNotificationHub
		var sub *subscriber.Subscriber
		sub, err := subscriber.New(subscriber.Config{
			Hub: hubURL, Topic: topic, CallbackURL: cb + name,
			Secret: []byte(subscriber.NewSecret()), LeaseSeconds: int(opt.Lease.Seconds()),
			Client: opt.Client, OnNotification: f.apply(name), Logger: opt.Logger,
			OnHubState: func(up bool, err error) {
				f.mu.Lock()
				f.down[name] = !up
				f.mu.Unlock()
				f.report(name, hubURL, sub, err)
				if up {
					f.say("subscribed to %s at %s", topic, hubURL)
					// Changes between the catch-up and the subscription.
					f.requestCatchup("subscribed")
				} else if refused(err) {
					f.mu.Lock()
					f.refusedBy[name] = true
					f.mu.Unlock()
					f.say("hub %s refused the callback %s (%v): %s; polling the Change Lists every %s meanwhile",
						hubURL, cb+name, err, refusalHint, opt.PollInterval)
				} else {
					f.say("hub %s unreachable (%v): polling the Change Lists", hubURL, err)
				}
			},
		})
		if err != nil {
			return fmt.Errorf("follow: set %s: %w", name, err)
		}
		defer sub.Close()
		opt.Mux.Handle("/"+name, sub.Handler())
		subs = append(subs, sub)
		f.subs = append(f.subs, followed{name, hubURL, sub})
		m.Emit(destination.Event{Kind: destination.EventSubscription, Set: name, Status: destination.SubPolling, URI: hubURL,
			Message: "subscribing"})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sub.Run(runCtx); err != nil && runCtx.Err() == nil {
				f.say("subscription to %s ended: %v", topic, err)
			}
		}()
	}

	t := time.NewTicker(opt.PollInterval)
	defer t.Stop()
	ticks := 0
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case why := <-f.catchup:
			f.sync(ctx, why)
		case <-t.C:
			ticks++
			for _, s := range f.subs {
				f.report(s.set, s.hub, s.sub, nil) // a renewed lease
			}
			f.mu.Lock()
			anyDown := false
			for _, d := range f.down {
				anyDown = anyDown || d
			}
			retry := f.retry
			f.mu.Unlock()
			switch {
			case retry && !anyDown:
				f.sync(ctx, "retry")
			case anyDown || ticks%10 == 0:
				f.sync(ctx, "poll")
			}
		}
	}
	// Leave politely: end the subscriptions at the hub.
	uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, sub := range subs {
		f.mu.Lock()
		never := f.refusedBy[f.subs[i].set] && !sub.State().Active
		f.mu.Unlock()
		if never {
			continue // the hub refused it: nothing to end there
		}
		if err := sub.Unsubscribe(uctx); err != nil {
			f.say("unsubscribe: %v", err)
		}
	}
	stopRuns()
	wg.Wait()
	for _, s := range m.Sets() {
		m.Emit(destination.Event{Kind: destination.EventSubscription, Set: s.Name, Status: destination.SubStopped})
	}
	return nil
}
