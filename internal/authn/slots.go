package authn

import (
	"context"
	"slices"
	"sync"
)

// slots hands out a fixed number of slots (the bcrypt comparisons that
// may run at once) to the requests waiting for one, taking clients in
// turn: a freed slot goes to the next client in a round, the longest
// waiting of its requests first. First come, first served would let a
// flood queued ahead make a new client wait for every request of it (90
// wrong passwords from 9 addresses: 90 bcrypt runs, seconds); in turns
// it waits for at most one request of each client waiting.
type slots struct {
	mu    sync.Mutex
	free  int
	queue map[string][]*waiter // per client, in arrival order
	turns []string             // the clients with waiters, next first
}

type waiter struct {
	ch      chan struct{} // closed when granted
	granted bool          // under mu
}

func newSlots(n int) *slots { return &slots{free: n, queue: map[string][]*waiter{}} }

// acquire waits for a slot for client; err: ctx ended first.
func (s *slots) acquire(ctx context.Context, client string) error {
	s.mu.Lock()
	if s.free > 0 && len(s.turns) == 0 {
		s.free--
		s.mu.Unlock()
		return nil
	}
	w := &waiter{ch: make(chan struct{})}
	if len(s.queue[client]) == 0 {
		s.turns = append(s.turns, client)
	}
	s.queue[client] = append(s.queue[client], w)
	s.mu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if w.granted { // granted as ctx ended: pass it on
		s.mu.Unlock()
		s.release()
		return ctx.Err()
	}
	q := slices.DeleteFunc(s.queue[client], func(x *waiter) bool { return x == w })
	if len(q) == 0 {
		delete(s.queue, client)
		s.turns = slices.DeleteFunc(s.turns, func(c string) bool { return c == client })
	} else {
		s.queue[client] = q
	}
	s.mu.Unlock()
	return ctx.Err()
}

// release gives a slot back: to the next client's turn, or free.
func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.turns) == 0 {
		s.free++
		return
	}
	client := s.turns[0]
	s.turns = s.turns[1:]
	q := s.queue[client]
	w := q[0]
	q[0] = nil
	if q = q[1:]; len(q) == 0 {
		delete(s.queue, client)
	} else {
		s.queue[client] = q
		s.turns = append(s.turns, client) // its next request: after the others'
	}
	w.granted = true
	close(w.ch)
}
