package hub

import (
	"context"
	"errors"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// DeadLetter is a notification that could not be delivered to one
// subscription within GiveUpAfter.
type DeadLetter = hubstore.DeadLetter

// kickClaim asks the claimer for a claim round soon.
func (h *Hub) kickClaim() {
	select {
	case h.claimWake <- struct{}{}:
	default:
	}
}

// claimer renews this node's claims every ClaimTTL/3 (picking up the
// subscriptions of nodes that died) and whenever subscriptions change.
// A round reads every subscription this node holds, so rounds are spaced
// by ten times the last one's duration (at most ClaimTTL/10): while
// thousands of subscriptions are verified, each kicking a round, the
// rounds coalesce instead of costing O(held) per new subscription.
func (h *Hub) claimer(ctx context.Context) {
	t := time.NewTicker(h.cfg.ClaimTTL / 3)
	defer t.Stop()
	var gap time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-h.claimWake:
		}
		if gap > 0 {
			g := time.NewTimer(gap)
			select {
			case <-ctx.Done():
				g.Stop()
				return
			case <-g.C:
			}
			select { // the kicks that came meanwhile are this round's
			case <-h.claimWake:
			default:
			}
		}
		start := time.Now()
		h.claim(ctx)
		gap = min(10*time.Since(start), h.cfg.ClaimTTL/10)
	}
}

// leaseWatch stops every delivery of this node, in-flight requests
// included, when its claims were not renewed in time (the store
// unreachable or slow): a quarter of the ttl before they may expire, so
// that no two nodes deliver one subscription at once (the others can take
// the claims only after the ttl, counted from a later instant). A later successful claim round resumes from the
// stored cursors.
func (h *Hub) leaseWatch(ctx context.Context) {
	t := time.NewTimer(h.cfg.ClaimTTL)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if wait := time.Until(time.Unix(0, h.leaseUntil.Load())); wait > 0 {
			t.Reset(wait + time.Millisecond)
			continue
		}
		h.mu.Lock()
		n := len(h.subs)
		for _, s := range h.subs {
			h.removeSubLocked(s)
		}
		h.mu.Unlock()
		if n > 0 {
			h.log.Warn("claims not renewed in time; deliveries stopped", "subscriptions", n)
		}
		t.Reset(h.cfg.ClaimTTL / 10)
	}
}

// claim runs one claim round: renew, take up to this node's fair share
// (the subscriptions spread over the live nodes), release what is beyond
// it, and start or stop delivery goroutines to match what is held.
func (h *Hub) claim(ctx context.Context) {
	h.claimMu.Lock()
	defer h.claimMu.Unlock()
	h.mu.Lock()
	held := len(h.subs)
	h.mu.Unlock()
	fair := (h.lastTotal + h.lastNodes - 1) / max(h.lastNodes, 1)
	want := max(fair-held, 0)
	if h.lastNodes <= 1 {
		want = 1 << 30 // alone (as far as we know): take all
	}
	start := time.Now()
	// Bounded, so that a hung call does not hold up the renewals after it.
	cctx, cancel := context.WithTimeout(ctx, h.cfg.ClaimTTL/2)
	c, err := h.st.Claim(cctx, h.node, h.cfg.ClaimTTL, want)
	cancel()
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, hubstore.ErrClosed) {
			h.log.Error("claiming subscriptions", "err", err)
		}
		return
	}
	// Our leases run from before the call (a lower bound on the store's
	// clock too, durations being alike); this node stops a quarter of the
	// ttl earlier still, so that a late timer or a descheduled goroutine
	// (up to that long) does not let it deliver after another node took
	// over.
	h.leaseUntil.Store(start.Add(h.cfg.ClaimTTL - h.cfg.ClaimTTL/4).UnixNano())
	nodesChanged := c.Nodes != h.lastNodes
	h.lastNodes, h.lastTotal = c.Nodes, c.Subscriptions
	h.nodes.Store(int32(c.Nodes))
	h.adopt(c.Held)
	if nodesChanged {
		h.kickClaim() // take the share computed with the new count
	}
	fair = (c.Subscriptions + c.Nodes - 1) / max(c.Nodes, 1)
	if excess := len(c.Held) - fair; c.Nodes > 1 && excess > max(1, fair/20) {
		h.shed(ctx, c.Held[len(c.Held)-excess:])
	}
}

// adopt makes the held set the one this node delivers: new claims start,
// lost ones stop, renewed ones take the stored subscription fields (a
// renewal on another node may have changed the secret or the lease).
func (h *Hub) adopt(held []hubstore.Subscription) {
	keep := make(map[string]bool, len(held))
	var unknownTopics []string
	h.mu.Lock()
	defer func() {
		h.mu.Unlock()
		if len(unknownTopics) > 0 {
			h.loadHeads(context.Background())
		}
	}()
	for _, r := range held {
		keep[r.Key] = true
		if s := h.subs[r.Key]; s != nil {
			s.mu.Lock()
			changed := !s.rec.Expires.Equal(r.Expires) || s.rec.Secret != r.Secret || s.rec.Callback != r.Callback
			s.rec.Callback, s.rec.Secret, s.rec.Lease, s.rec.Expires = r.Callback, r.Secret, r.Lease, r.Expires
			s.mu.Unlock()
			if changed {
				s.wake()
			}
			continue
		}
		s := newSub(r)
		h.subs[s.key] = s
		ts, known := h.topics[r.Topic]
		if !known {
			unknownTopics = append(unknownTopics, r.Topic)
			ts = h.topic(r.Topic)
		}
		ts.subs[s.key] = s
		s.ts = ts
		h.startSubLocked(s)
	}
	for k, s := range h.subs {
		if !keep[k] {
			h.removeSubLocked(s)
		}
	}
	h.m.subscriptions.Set(float64(len(h.subs)))
}

// lost stops delivering subscriptions whose claim the store says this
// node no longer holds (their cursors were not written).
func (h *Hub) lost(keys []string) {
	h.mu.Lock()
	for _, k := range keys {
		if s := h.subs[k]; s != nil {
			h.removeSubLocked(s)
		}
	}
	h.mu.Unlock()
	h.kickClaim()
}

// shed hands subscriptions over to other nodes: stop delivering, wait for
// the attempt in flight, persist the cursor, release the claim.
func (h *Hub) shed(ctx context.Context, rs []hubstore.Subscription) {
	var subs []*sub
	h.mu.Lock()
	for _, r := range rs {
		if s := h.subs[r.Key]; s != nil {
			subs = append(subs, s)
			s.mu.Lock()
			if s.stop != nil {
				s.stop()
			}
			s.mu.Unlock()
		}
	}
	h.mu.Unlock()
	var us []hubstore.CursorUpdate
	var keys []string
	for _, s := range subs {
		s.mu.Lock()
		done := s.done
		s.mu.Unlock()
		if done != nil {
			select {
			case <-done:
			case <-ctx.Done():
				return
			}
		}
		s.mu.Lock()
		us = append(us, s.update())
		s.mu.Unlock()
		keys = append(keys, s.key)
	}
	if _, err := h.st.UpdateCursors(ctx, h.node, us); err != nil {
		h.log.Error("persisting cursors before a handover", "err", err)
	}
	h.mu.Lock()
	for _, s := range subs {
		h.removeSubLocked(s)
	}
	h.mu.Unlock()
	if err := h.st.Release(ctx, h.node, keys...); err != nil {
		h.log.Error("releasing subscriptions", "err", err)
	}
	h.log.Info("subscriptions handed over", "count", len(keys))
}

// watch follows the changes of all nodes: new entries wake the
// subscriptions of their topics, subscription changes start a claim
// round, new jobs wake the verifier.
func (h *Hub) watch(ctx context.Context, events <-chan hubstore.Event) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev&hubstore.EventEntries != 0 {
				if err := h.loadHeads(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, hubstore.ErrClosed) {
					h.log.Error("following the logs", "err", err)
				}
			}
			if ev&hubstore.EventSubscriptions != 0 {
				h.kickClaim()
			}
			if ev&hubstore.EventJobs != 0 {
				h.wakeVerifier()
			}
		}
	}
}
