package aggregate

import (
	"context"
	"crypto/sha256"
	"sort"
	"time"
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
	if err != nil || ctx.Err() != nil {
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
		ok, err := st.Claim(ctx, a.opt.Node, c.id, ttl)
		if err != nil && ctx.Err() != nil {
			return
		}
		if err == nil && !ok {
			a.lose(c.s)
			continue
		}
		held++
	}
	for _, c := range cs {
		if c.held || held >= share {
			continue
		}
		ok, err := st.Claim(ctx, a.opt.Node, c.id, ttl)
		if err != nil || !ok {
			continue
		}
		held++
		a.mu.Lock()
		c.s.held = true
		a.mu.Unlock()
		a.emit(Event{Source: c.id, Event: ev(EventLease, "taken by "+a.opt.Node)})
		select {
		case c.s.wake <- struct{}{}:
		default:
		}
	}
	// Beyond the fair share (a node joined): give back idle Sources.
	for i := len(cs) - 1; i >= 0 && held > share; i-- {
		c := cs[i]
		a.mu.Lock()
		idle := c.s.held && !c.s.running && !c.s.following && !c.s.queued
		if idle {
			c.s.held = false
		}
		a.mu.Unlock()
		if idle {
			st.Release(ctx, a.opt.Node, c.id)
			held--
			a.emit(Event{Source: c.id, Event: ev(EventLease, "released by "+a.opt.Node+" (fair share)")})
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
