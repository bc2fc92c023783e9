package authn

import (
	"context"
	"testing"
	"time"
)

// TestSlotsTurns: with one slot held, waiters of clients a (three), b and
// c get it in turns: a, b, c, a, a; a waiter whose context ends leaves
// the queue without losing the slot.
func TestSlotsTurns(t *testing.T) {
	s := newSlots(1)
	ctx := context.Background()
	if err := s.acquire(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	queued := func(client string) int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.queue[client])
	}
	// wait queues a waiter of client, and waits until it is queued so
	// that the order is known.
	wait := func(client string) {
		n := queued(client)
		go func() {
			if s.acquire(ctx, client) == nil {
				got <- client
			}
		}()
		for deadline := time.Now().Add(5 * time.Second); queued(client) == n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("waiter not queued")
			}
		}
	}
	for _, c := range []string{"a", "a", "a", "b", "c"} {
		wait(c)
	}
	cctx, cancel := context.WithCancel(ctx)
	gone := make(chan error)
	go func() { gone <- s.acquire(cctx, "d") }()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-gone; err == nil {
		t.Fatal("a cancelled waiter got the slot")
	}
	var order string
	for range 5 {
		s.release()
		order += <-got
	}
	if order != "abcaa" {
		t.Errorf("turns %q, want abcaa", order)
	}
	s.release()
	if s.free != 1 || len(s.turns) != 0 || len(s.queue) != 0 {
		t.Errorf("after all: free %d, turns %v, queue %v", s.free, s.turns, s.queue)
	}
}
