package aggregate

import (
	"context"
	"sync"
	"time"
)

// slots share the run slots (Options.Workers) between Sources: a freed
// slot goes to the waiter due longest ago whose host is under its limit
// (Options.PerHost). One policy, in one place: every run (a poll, a
// follower's catch-up) takes its slot here.
type slots struct {
	mu       sync.Mutex
	max      int
	perHost  int
	busy     int
	hostBusy map[string]int
	waiting  []*waiter
}

type waiter struct {
	host    string
	due     time.Time
	ready   chan struct{}
	granted bool
}

func newSlots(max, perHost int) *slots {
	return &slots{max: max, perHost: perHost, hostBusy: map[string]int{}}
}

// acquire waits for a slot for a run against host that has been due
// since due; release gives it back (call it once).
func (s *slots) acquire(ctx context.Context, host string, due time.Time) (release func(), err error) {
	w := &waiter{host: host, due: due, ready: make(chan struct{})}
	s.mu.Lock()
	s.waiting = append(s.waiting, w)
	s.dispatch()
	s.mu.Unlock()
	var once sync.Once
	rel := func() { once.Do(func() { s.release(host) }) }
	select {
	case <-w.ready:
		return rel, nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if w.granted {
			s.busy--
			s.hostBusy[host]--
			s.dispatch()
		} else {
			for i, x := range s.waiting {
				if x == w {
					s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
					break
				}
			}
		}
		return nil, ctx.Err()
	}
}

func (s *slots) release(host string) {
	s.mu.Lock()
	s.busy--
	s.hostBusy[host]--
	if s.hostBusy[host] <= 0 {
		delete(s.hostBusy, host)
	}
	s.dispatch()
	s.mu.Unlock()
}

// dispatch grants free slots; s.mu is held.
func (s *slots) dispatch() {
	for s.busy < s.max {
		best := -1
		for i, w := range s.waiting {
			if s.hostBusy[w.host] >= s.perHost {
				continue
			}
			if best < 0 || w.due.Before(s.waiting[best].due) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		w := s.waiting[best]
		s.waiting = append(s.waiting[:best], s.waiting[best+1:]...)
		s.busy++
		s.hostBusy[w.host]++
		w.granted = true
		close(w.ready)
	}
}

// load returns the slots in use and the runs waiting.
func (s *slots) load() (busy, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busy, len(s.waiting)
}
