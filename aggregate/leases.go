package aggregate

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
)

// keepLeases heartbeats, renews this node's leases and claims its fair
// share of the Sources (ceil(sources / nodes alive)) every LeaseTTL/3,
// until ctx ends. A Source whose lease is lost stops here (its run is
// cancelled); one newly held is woken.
func (a *Aggregator) keepLeases(ctx context.Context) {
	ttl := a.opt.LeaseTTL
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	first := true
	for {
		a.leaseRound(ctx, ttl)
		if first {
			close(a.firstRound)
			first = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *Aggregator) leaseRound(ctx context.Context, ttl time.Duration) {
	st := a.opt.Store
	alive, err := st.Heartbeat(ctx, a.opt.Node, ttl)
	if ctx.Err() != nil {
		return
	}
	if errors.Is(err, aggstore.ErrNodeInUse) {
		// Another process took this node's name over while this one did
		// not heartbeat (paused past it): its leases are that one's, and
		// this process's runs fenced. Stop, claiming nothing.
		a.emit(Event{Event: ev(EventLease, "node "+a.opt.Node+" taken over by another process: stopping")}.withError(err))
		a.displace(err)
		return
	}
	if err != nil {
		// The leases run out unless the store answers again within the
		// ttl; say so rather than let Sources stop silently.
		a.emit(Event{Event: ev(EventLease, "heartbeat failed: the store does not answer")}.withError(err))
		return
	}
	nodes := max(1, len(alive))
	a.mu.Lock()
	type cand struct {
		id   string
		s    *srcState
		held bool
		rank [32]byte
	}
	cs := make([]cand, 0, len(a.srcs))
	for id, s := range a.srcs {
		// Each node tries the Sources in its own order, so two nodes
		// starting together do not race for the same ones.
		cs = append(cs, cand{id, s, s.held, sha256.Sum256([]byte(a.opt.Node + "\x00" + id))})
	}
	a.mu.Unlock()
	share := (len(cs) + nodes - 1) / nodes
	sort.Slice(cs, func(i, k int) bool { return string(cs[i].rank[:]) < string(cs[k].rank[:]) })
	held := 0
	// Renew first: what this node runs stays with it.
	for _, c := range cs {
		if !c.held {
			continue
		}
		sent := time.Now()
		ok, err := st.Claim(ctx, a.opt.Node, c.id, ttl)
		if err != nil && ctx.Err() != nil {
			return
		}
		if err == nil && !ok {
			a.lose(c.s)
			continue
		}
		if err == nil {
			a.mu.Lock()
			c.s.leaseUntil = sent.Add(ttl)
			a.mu.Unlock()
		}
		held++
	}
	var taken []cand
	for _, c := range cs {
		if c.held || held >= share {
			continue
		}
		sent := time.Now()
		ok, err := st.Claim(ctx, a.opt.Node, c.id, ttl)
		if err != nil || !ok {
			continue
		}
		a.mu.Lock()
		c.s.leaseUntil = sent.Add(ttl)
		a.mu.Unlock()
		held++
		taken = append(taken, c)
	}
	// A Source taken from another node goes on from the schedule that
	// node left in the store (its next run, failures, last success), not
	// from the copy this node read when it started.
	scheds := map[string]aggstore.Schedule{}
	if len(taken) > 0 {
		if ss, err := st.Schedules(ctx); err == nil {
			for _, s := range ss {
				scheds[s.Source] = s
			}
		}
	}
	for _, c := range taken {
		a.mu.Lock()
		c.s.held = true
		if s, ok := scheds[c.id]; ok {
			c.s.sched = s
		}
		a.mu.Unlock()
		a.emit(Event{Source: c.id, Event: ev(EventLease, "taken by "+a.opt.Node)})
		select {
		case c.s.wake <- struct{}{}:
		default:
		}
	}
	// Beyond the fair share (a node joined): give back idle Sources,
	// polled ones first. A followed Source is always open (following):
	// between two of its runs its follower is stopped and the lease left
	// to expire rather than released, so that the follower has the
	// lease's time to close the mirror and leave the hub before another
	// node opens them. Without this a node that joins never gets any of
	// the Sources followed by the nodes already there.
	for pass := range 2 {
		for i := len(cs) - 1; i >= 0 && held > share; i-- {
			c := cs[i]
			a.mu.Lock()
			idle := c.s.held && !c.s.running && !c.s.queued && c.s.following == (pass == 1)
			var cancel context.CancelFunc
			if idle {
				c.s.held = false
				cancel = c.s.cancelHold
			}
			a.mu.Unlock()
			if !idle {
				continue
			}
			held--
			if pass == 0 {
				st.Release(ctx, a.opt.Node, c.id)
				a.emit(Event{Source: c.id, Event: ev(EventLease, "released by "+a.opt.Node+" (fair share)")})
				continue
			}
			if cancel != nil {
				cancel()
			}
			a.emit(Event{Source: c.id, Event: ev(EventLease, "given up by "+a.opt.Node+" (fair share): its lease expires")})
		}
	}
}

// lose stops s here: another node holds it now.
func (a *Aggregator) lose(s *srcState) {
	a.mu.Lock()
	s.held = false
	cancel := s.cancelHold
	a.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	a.emit(Event{Source: s.src.ID, Event: ev(EventLease, "lost by "+a.opt.Node)})
}

// notHeldLocked stops s here when the store says another node holds it
// (as lose, from a run); a.mu is held. The next lease round claims it
// again if it is free.
func (a *Aggregator) notHeldLocked(s *srcState) {
	s.held = false
	if s.cancelHold != nil {
		s.cancelHold()
	}
}

// fence is the Destination's Options.Fence for st's runs: it asks the
// store whether the run under way still holds the lease tenure it
// started under (aggstore.Store.Fence), before each state commit and
// each deletion. Once fenced, the run is cancelled and every later call
// refuses at once, so a node that paused past its lease stops within
// one commit batch and records nothing after another node took over;
// what remains is described at destination.Options.Fence. A store that
// does not answer is not a refusal while this process's own clock says
// the lease it last renewed still lives (no other node can hold it
// then), so that a slow store does not fail the runs.
func (a *Aggregator) fence(ctx context.Context, st *srcState) error {
	a.mu.Lock()
	id, fenced, until := st.run, st.fenced, st.leaseUntil
	a.mu.Unlock()
	if id == 0 {
		// Outside a run: a followed mirror being opened, which writes
		// its base URL (the same again) and nothing else.
		return nil
	}
	if id == fenced {
		return fmt.Errorf("run %d: %w", id, aggstore.ErrFenced)
	}
	fctx, cancel := context.WithTimeout(ctx, max(a.opt.LeaseTTL/3, time.Second))
	err := a.opt.Store.Fence(fctx, id)
	cancel()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, aggstore.ErrFenced):
		a.mu.Lock()
		first := st.fenced != id
		st.fenced = id
		stop := st.cancelRun
		if st.run != id {
			stop = nil // that run has ended meanwhile
		}
		a.mu.Unlock()
		if stop != nil {
			stop()
		}
		if first {
			a.emit(Event{Source: st.src.ID, Event: ev(EventLease, fmt.Sprintf("run %d fenced: its lease of %s ended under it (this node paused past it, or lost it); it stops and writes nothing more", id, a.opt.Node))})
		}
		return err
	case time.Now().Before(until):
		return nil
	}
	return fmt.Errorf("fence of run %d: the store does not answer and the lease may have ended: %w", id, err)
}
