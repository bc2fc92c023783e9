package follow

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/destination/discover"
	"github.com/resourcesync-go/resourcesync/feed/activity"
	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/websub/subscriber"
	"github.com/resourcesync-go/resourcesync/wspush"
)

// pushEndpoint returns the WebSocket subscription endpoint a set's
// Capability List advertises (rel=wspush.SubscriptionRel), "" when none
// or when it is not on the Capability List's origin: the mirror sends its
// credentials there.
func pushEndpoint(s discover.Set) string {
	for _, l := range s.Links {
		if l.Rel != wspush.SubscriptionRel || l.Href == "" {
			continue
		}
		cl, err1 := url.Parse(s.CapabilityList)
		ep, err2 := url.Parse(l.Href)
		if err1 != nil || err2 != nil {
			return ""
		}
		ep = cl.ResolveReference(ep)
		if ep.Scheme != cl.Scheme || !strings.EqualFold(ep.Host, cl.Host) {
			return ""
		}
		return ep.String()
	}
	return ""
}

// syncFrom catches up and returns where the pushed stream continues
// from: how far the Source's Change Lists reached (else the checkpoint).
// ok is false when the catch-up failed outright.
func (f *follower) syncFrom(ctx context.Context, set string) (time.Time, bool) {
	var from time.Time
	ok := false
	f.sync(ctx, "push connected", func(rep *destination.Report) {
		for _, sr := range rep.Sets {
			if sr.Set == set {
				from, ok = sr.SourceUntil, true
				if from.IsZero() {
					from = sr.Checkpoint.Until
				}
			}
		}
	})
	return from, ok && !from.IsZero()
}

// maxSkew is how far in the future an activity's endTime may be: one
// beyond it would move the checkpoint past changes still to come.
const maxSkew = time.Minute

// pushLoop keeps one set's WebSocket channel open until ctx ends:
// subscribe, connect, catch up from the Change Lists, then apply each
// activity as a one-entry change notification. Any failure closes the
// channel; it is opened again after a backoff, and the catch-up that
// follows covers what was missed.
func (f *follower) pushLoop(ctx context.Context, s discover.Set, endpoint string) {
	name := s.Name
	apply := f.apply(name)
	fails := 0
	for ctx.Err() == nil {
		connected, err := f.pushOnce(ctx, s, endpoint, apply)
		if ctx.Err() != nil {
			return
		}
		if connected {
			fails = 0 // a dropped connection, not a Source that refuses
		}
		f.mu.Lock()
		f.down[name] = true
		f.mu.Unlock()
		f.m.Emit(destination.Event{Kind: destination.EventSubscription, Set: name, URI: endpoint, Status: destination.SubPolling,
			Message: "live push unavailable: " + errString(err)})
		fails++
		d := retry.HalfJitter(retry.Backoff(fails, pushBackoff, time.Minute))
		f.say("live push for set %s ended (%v): catching up from the Change Lists, reconnecting in %s", name, err, d.Round(time.Millisecond))
		f.requestCatchup("push reconnect")
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "closed"
	}
	return err.Error()
}

// pushBackoff is the first wait before reconnecting.
var pushBackoff = time.Second

// pushOnce runs one connection; connected says whether it opened.
func (f *follower) pushOnce(ctx context.Context, s discover.Set, endpoint string, apply func(context.Context, subscriber.Notification) error) (connected bool, _ error) {
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	d, err := wspush.Subscribe(sctx, f.opt.Client, endpoint, s.CapabilityList)
	if err != nil {
		cancel()
		return false, err
	}
	r, err := wspush.Dial(sctx, f.opt.Client, d.ReceiveFrom)
	cancel()
	if err != nil {
		return false, err
	}
	defer r.Close()
	// Connected: what the Source publishes from now on is pushed; what
	// it published before is in the Change Lists. The stream continues
	// from where they end: if the catch-up did not get there (failures),
	// the first activity is not contiguous and Apply asks for another.
	last, ok := f.syncFrom(ctx, s.Name)
	if !ok {
		return true, errors.New("the catch-up after connecting failed")
	}
	f.mu.Lock()
	f.down[s.Name] = false
	f.mu.Unlock()
	f.m.Emit(destination.Event{Kind: destination.EventSubscription, Set: s.Name, URI: endpoint, Status: destination.SubNotifications})
	f.say("live push for set %s from %s", s.Name, endpoint)
	base := f.m.Base()
	type next struct {
		a   *activity.Activity
		err error
	}
	frames := make(chan next, 64)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for {
			a, err := r.Next(rctx)
			select {
			case frames <- next{a, err}:
			case <-rctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var batch []rs.Entry
	var received time.Time
	for {
		// The records of one update arrive together: they are applied as
		// one notification, as WebSub sends them, since their times are
		// often equal and a checkpoint cannot sit between them.
		var fr next
		if len(batch) == 0 {
			select {
			case fr = <-frames:
			case <-ctx.Done():
				return true, ctx.Err()
			}
			received = time.Now()
		} else {
			t := time.NewTimer(pushQuiet)
			select {
			case fr = <-frames:
				t.Stop()
			case <-t.C:
				fr.a = nil
			case <-ctx.Done():
				t.Stop()
				return true, ctx.Err()
			}
		}
		if fr.err != nil {
			return true, fr.err
		}
		if fr.a != nil {
			en, why := pushEntry(fr.a, base, time.Now())
			switch {
			case why != "":
				f.say("live push for set %s: %s: ignored", s.Name, why)
				if f.opt.Logger != nil {
					f.opt.Logger.Warn("follow: pushed activity ignored", "set", s.Name, "why", why)
				}
			case en == nil:
				// Known to change something, but not enough to apply
				// safely (a Move, no digest): the Change Lists say what.
				f.requestCatchup("push without digest")
			default:
				batch = append(batch, *en)
			}
			if len(batch) < maxBatch {
				continue
			}
		}
		if len(batch) == 0 {
			continue
		}
		until := batch[0].MD.DateTime
		for _, en := range batch[1:] {
			if en.MD.DateTime.Time().After(until.Time()) {
				until = en.MD.DateTime
			}
		}
		if !until.Time().After(last) {
			// A straggler with the time of a batch applied already: the
			// checkpoint is there, so only a catch-up can apply it.
			batch = batch[:0]
			f.requestCatchup("push straggler")
			continue
		}
		n := subscriber.Notification{Topic: s.CapabilityList, Received: received,
			Head:    rs.Head{MD: rs.Metadata{Capability: rs.CapChangeNotification, From: rs.NewTime(last), Until: until}},
			Entries: batch}
		last = until.Time()
		err := apply(ctx, n)
		batch = nil
		if err != nil && ctx.Err() != nil {
			return true, ctx.Err()
		}
	}
}

// pushQuiet is how long a batch waits for the next frame of the same
// update; maxBatch bounds it.
const (
	pushQuiet = 3 * time.Millisecond
	maxBatch  = 1000
)

// pushEntry turns an activity into the Change List entry it stands for.
// why says why it is ignored (another origin, outside the mirrored base,
// a time in the future); a nil entry without why asks for a catch-up
// instead (the activity cannot be applied on its own).
func pushEntry(a *activity.Activity, base string, now time.Time) (*rs.Entry, string) {
	if a.Type == activity.Refresh {
		return nil, ""
	}
	if a.Object == nil || a.Object.ID == "" {
		return nil, "activity " + a.Type + " names no object"
	}
	id := a.Object.ID
	if !under(id, base) {
		return nil, "object " + id + " is outside " + base
	}
	if a.EndTime.IsZero() || a.EndTime.After(now.Add(maxSkew)) {
		return nil, "object " + id + ": endTime missing or in the future"
	}
	ch, ok := activity.ToChange(a.Type)
	if !ok {
		return nil, "" // Move, Add, Remove, unknown: catch up
	}
	en := &rs.Entry{Loc: id, MD: rs.Metadata{Change: ch, DateTime: rs.NewTime(a.EndTime.UTC())}}
	if ch != rs.Deleted {
		if a.Object.Digest == "" {
			return nil, ""
		}
		h, err := rs.ParseHashes(a.Object.Digest)
		if err != nil {
			return nil, "object " + id + ": digest: " + err.Error()
		}
		en.MD.Hashes = h
		en.MD.Type = a.Object.Format
		if a.Object.Size != nil && *a.Object.Size >= 0 {
			en.MD.Length, en.MD.HasLength = *a.Object.Size, true
		}
	}
	return en, ""
}

// under reports whether uri is below base's directory, on its origin,
// without dot segments that would climb out of it.
func under(uri, base string) bool {
	u, err := url.Parse(uri)
	if err != nil || u.User != nil || u.Fragment != "" {
		return false
	}
	b, err := url.Parse(base)
	if err != nil {
		return false
	}
	if u.Scheme != b.Scheme || !strings.EqualFold(u.Host, b.Host) {
		return false
	}
	dir := b.Path[:strings.LastIndex(b.Path, "/")+1]
	p := u.EscapedPath()
	if !strings.HasPrefix(p, dir) || len(p) == len(dir) {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." || strings.EqualFold(seg, "%2e") || strings.EqualFold(seg, "%2e%2e") || strings.EqualFold(seg, ".%2e") || strings.EqualFold(seg, "%2e.") {
			return false
		}
	}
	return true
}
