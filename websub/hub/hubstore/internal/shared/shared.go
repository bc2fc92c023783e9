// Package shared holds what the in-process stores (memstore, boltstore)
// have in common: claims kept in memory and Watch channels.
package shared

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

type hold struct {
	node  string
	until time.Time
}

// Leases is the claim table of one state. The caller serialises access
// (it holds its store's lock).
type Leases struct {
	Now   func() time.Time
	subs  map[string]hold
	jobs  map[uint64]hold
	nodes map[string]time.Time
}

// NewLeases returns an empty table on the clock now (time.Now if nil).
func NewLeases(now func() time.Time) *Leases {
	if now == nil {
		now = time.Now
	}
	return &Leases{Now: now, subs: map[string]hold{}, jobs: map[uint64]hold{}, nodes: map[string]time.Time{}}
}

// Holds reports whether node holds a live claim on subscription key.
func (l *Leases) Holds(node, key string) bool {
	h, ok := l.subs[key]
	return ok && h.node == node && l.Now().Before(h.until)
}

// Live reports whether anyone holds a claim on subscription key live at
// now (l.Now(), read once by a caller asking about many keys): Claim
// would not take it, so a caller may leave it out of keys (and need not
// sort it).
func (l *Leases) Live(key string, now time.Time) bool {
	h, ok := l.subs[key]
	return ok && now.Before(h.until)
}

// Claim renews node's claims, takes at most max of keys (all
// subscription keys, in order) that nobody holds live, and returns the
// keys node holds, sorted, and the number of live nodes.
func (l *Leases) Claim(node string, ttl time.Duration, max int, keys []string) (held []string, nodes int) {
	now := l.Now()
	until := now.Add(ttl)
	l.nodes[node] = until
	for k, h := range l.subs {
		if h.node == node && now.Before(h.until) {
			l.subs[k] = hold{node, until}
			held = append(held, k)
		}
	}
	for _, k := range keys {
		if max <= 0 {
			break
		}
		h, ok := l.subs[k]
		if ok && now.Before(h.until) {
			continue
		}
		l.subs[k] = hold{node, until}
		held = append(held, k)
		max--
	}
	for n, u := range l.nodes {
		if now.Before(u) {
			nodes++
		} else {
			delete(l.nodes, n)
		}
	}
	slices.Sort(held)
	return held, nodes
}

// Drop forgets the claim on subscription key (deleted).
func (l *Leases) Drop(key string) { delete(l.subs, key) }

// Release gives up node's claims on keys, or all its claims and its
// liveness when keys is empty.
func (l *Leases) Release(node string, keys []string) {
	if len(keys) == 0 {
		for k, h := range l.subs {
			if h.node == node {
				delete(l.subs, k)
			}
		}
		for id, h := range l.jobs {
			if h.node == node {
				delete(l.jobs, id)
			}
		}
		delete(l.nodes, node)
		return
	}
	for _, k := range keys {
		if h, ok := l.subs[k]; ok && h.node == node {
			delete(l.subs, k)
		}
	}
}

// JobFree reports whether node may claim job id: nobody else holds it live.
func (l *Leases) JobFree(node string, id uint64) bool {
	h, ok := l.jobs[id]
	return !ok || h.node == node || !l.Now().Before(h.until)
}

// ClaimJob gives job id to node for ttl.
func (l *Leases) ClaimJob(node string, id uint64, ttl time.Duration) {
	l.jobs[id] = hold{node, l.Now().Add(ttl)}
}

// DropJob forgets the claim on job id.
func (l *Leases) DropJob(id uint64) { delete(l.jobs, id) }

// Watchers fans Events out to Watch channels, coalesced.
type Watchers struct {
	mu     sync.Mutex
	ws     map[*watcher]struct{}
	closed bool
}

type watcher struct {
	mu     sync.Mutex
	ch     chan hubstore.Event
	closed bool
}

// Add returns a new channel, closed when ctx ends or Close is called.
func (s *Watchers) Add(ctx context.Context) (<-chan hubstore.Event, error) {
	w := &watcher{ch: make(chan hubstore.Event, 1)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, hubstore.ErrClosed
	}
	if s.ws == nil {
		s.ws = map[*watcher]struct{}{}
	}
	s.ws[w] = struct{}{}
	s.mu.Unlock()
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		delete(s.ws, w)
		s.mu.Unlock()
		w.close()
	})
	return w.ch, nil
}

func (w *watcher) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
}

func (w *watcher) send(ev hubstore.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	// This goroutine is the only sender while it holds w.mu: after the
	// pending value (if any) is taken and merged, the send cannot block.
	select {
	case old := <-w.ch:
		ev |= old
	default:
	}
	w.ch <- ev
}

// Notify sends ev to every channel.
func (s *Watchers) Notify(ev hubstore.Event) {
	s.mu.Lock()
	ws := make([]*watcher, 0, len(s.ws))
	for w := range s.ws {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	for _, w := range ws {
		w.send(ev)
	}
}

// Close closes every channel; Add fails afterwards.
func (s *Watchers) Close() {
	s.mu.Lock()
	s.closed = true
	ws := s.ws
	s.ws = nil
	s.mu.Unlock()
	for w := range ws {
		w.close()
	}
}

// Time normalises a time as the stores return it: UTC, no monotonic
// reading, zero kept zero.
func Time(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.Round(0).UTC()
}

// ClaimJobs implements hubstore.Store.ClaimJobs over all jobs in ID order.
func ClaimJobs(l *Leases, jobs []hubstore.Job, node string, now time.Time, ttl time.Duration, max int) ([]hubstore.Job, time.Time, error) {
	var due []hubstore.Job
	var next time.Time
	seen := map[string]bool{}
	for _, j := range jobs {
		if seen[j.Key] {
			continue
		}
		seen[j.Key] = true
		if !l.JobFree(node, j.ID) {
			continue
		}
		if j.NextAt.After(now) || len(due) >= max {
			if next.IsZero() || j.NextAt.Before(next) {
				next = j.NextAt
			}
			continue
		}
		l.ClaimJob(node, j.ID, ttl)
		due = append(due, j)
	}
	return due, Time(next), nil
}
