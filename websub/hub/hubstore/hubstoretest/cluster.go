package hubstoretest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// RunCluster checks claims, fencing and Watch across two handles on one
// state (two nodes): open2 returns them, fresh for each subtest.
func RunCluster(t *testing.T, open2 func(t *testing.T) (a, b hubstore.Store)) {
	ctx := context.Background()

	t.Run("Model", func(t *testing.T) { a, b := open2(t); runModel(t, a, b) })

	t.Run("SharedLog", func(t *testing.T) {
		a, b := open2(t)
		var want uint64
		for i := range 20 {
			s := a
			if i%3 == 0 {
				s = b
			}
			want++
			if seq := must(s.Append(ctx, "https://a.example/", entry(fmt.Sprint(i))))(t); seq != want {
				t.Fatalf("append %d via %d: seq %d", i, i%3, seq)
			}
		}
		if es := must(b.Entries(ctx, "https://a.example/", 0, 100))(t); len(es) != 20 {
			t.Fatalf("b reads %d entries", len(es))
		}
		ok(t, a.PutSubscription(ctx, sub("k1", "https://a.example/")))
		if r := must(b.GetSubscription(ctx, "k1"))(t); r.Secret != "s-k1" {
			t.Fatalf("b reads %+v", r)
		}
	})

	t.Run("Claims", func(t *testing.T) { a, b := open2(t); testClaims(t, a, b) })

	t.Run("ClaimExpires", func(t *testing.T) {
		a, b := open2(t)
		for i := range 4 {
			ok(t, a.PutSubscription(ctx, sub(fmt.Sprint("k", i), "https://a.example/")))
		}
		const ttl = 300 * time.Millisecond
		ca := must(a.Claim(ctx, "A", ttl, 100))(t)
		if len(ca.Held) != 4 {
			t.Fatalf("A holds %d", len(ca.Held))
		}
		if cb := must(b.Claim(ctx, "B", ttl, 100))(t); len(cb.Held) != 0 || cb.Nodes != 2 {
			t.Fatalf("B while A's lease is live: %d held, %d nodes", len(cb.Held), cb.Nodes)
		}
		time.Sleep(ttl + 100*time.Millisecond) // A does not renew
		cb := must(b.Claim(ctx, "B", time.Minute, 100))(t)
		if len(cb.Held) != 4 {
			t.Fatalf("B after A's lease ran out holds %d", len(cb.Held))
		}
		if cb.Nodes != 1 {
			t.Fatalf("nodes alive %d, want 1 (A stopped renewing)", cb.Nodes)
		}
		// A, late, is fenced: no cursor moves, backwards or forwards.
		refused := must(a.UpdateCursors(ctx, "A", []hubstore.CursorUpdate{{Key: "k0", Cursor: 9}, {Key: "k1", Cursor: 9}}))(t)
		if !slices.Equal(refused, []string{"k0", "k1"}) {
			t.Fatalf("A's late updates refused %v", refused)
		}
		if _, err := a.AddDeadLetter(ctx, "A", hubstore.DeadLetter{Topic: "https://a.example/"}, hubstore.CursorUpdate{Key: "k2", Cursor: 9}); !errors.Is(err, hubstore.ErrNotHolder) {
			t.Fatalf("A's late dead letter: %v", err)
		}
		if r := must(b.GetSubscription(ctx, "k0"))(t); r.Cursor != 0 {
			t.Fatalf("fenced update moved the cursor to %d", r.Cursor)
		}
		if ca := must(a.Claim(ctx, "A", ttl, 100))(t); len(ca.Held) != 0 {
			t.Fatalf("A re-claims what B holds: %v", keysOf(ca.Held))
		}
		if refused := must(b.UpdateCursors(ctx, "B", []hubstore.CursorUpdate{{Key: "k0", Cursor: 2}}))(t); len(refused) != 0 {
			t.Fatalf("B refused %v", refused)
		}
	})

	t.Run("CloseKeepsClaims", func(t *testing.T) {
		a, b := open2(t)
		ok(t, a.PutSubscription(ctx, sub("k1", "https://a.example/")))
		const ttl = 300 * time.Millisecond
		must(a.Claim(ctx, "A", ttl, 10))(t)
		a.Close() // like a killed process: the claim stays until it expires
		if cb := must(b.Claim(ctx, "B", ttl, 10))(t); len(cb.Held) != 0 {
			t.Fatal("closing a handle released its claims")
		}
		time.Sleep(ttl + 100*time.Millisecond)
		if cb := must(b.Claim(ctx, "B", ttl, 10))(t); len(cb.Held) != 1 {
			t.Fatal("B did not take the dead node's subscription")
		}
	})

	t.Run("Jobs", func(t *testing.T) {
		a, b := open2(t)
		for i := range 6 {
			must(a.AddJob(ctx, hubstore.Job{Key: fmt.Sprint("k", i), Host: "h:80", NextAt: t0}, 0, 0))(t)
		}
		ja, _ := must2(t)(a.ClaimJobs(ctx, "A", t0, time.Minute, 4))
		jb, _ := must2(t)(b.ClaimJobs(ctx, "B", t0, time.Minute, 4))
		if len(ja) != 4 || len(jb) != 2 {
			t.Fatalf("A got %d jobs, B %d", len(ja), len(jb))
		}
		for _, x := range ja {
			for _, y := range jb {
				if x.ID == y.ID {
					t.Fatalf("job %d claimed by both", x.ID)
				}
			}
		}
		if _, err := b.AddJob(ctx, hubstore.Job{Key: "k9", Host: "h:80"}, 0, 6); !errors.Is(err, hubstore.ErrTooManyJobs) {
			t.Fatalf("host limit across handles: %v", err)
		}
	})

	t.Run("JobClaimExpires", func(t *testing.T) {
		a, b := open2(t)
		j := must(a.AddJob(ctx, hubstore.Job{Key: "k1", Host: "h:80", NextAt: t0}, 0, 0))(t)
		const ttl = 300 * time.Millisecond
		if due, _ := must2(t)(a.ClaimJobs(ctx, "A", t0, ttl, 10)); len(due) != 1 {
			t.Fatalf("A got %d jobs", len(due))
		}
		if due, _ := must2(t)(b.ClaimJobs(ctx, "B", t0, ttl, 10)); len(due) != 0 {
			t.Fatal("B got a job A holds")
		}
		time.Sleep(ttl + 100*time.Millisecond) // A died
		due, _ := must2(t)(b.ClaimJobs(ctx, "B", t0, time.Minute, 10))
		if len(due) != 1 || due[0].ID != j.ID {
			t.Fatalf("B after A's claim ran out: %+v", due)
		}
		if due, _ := must2(t)(a.ClaimJobs(ctx, "A", t0, ttl, 10)); len(due) != 0 {
			t.Fatal("A took the job back from B")
		}
	})

	t.Run("Watch", func(t *testing.T) { a, b := open2(t); testWatch(t, a, b) })
}

// testClaims: node names A (on handle a) and B (on b); a may equal b.
func testClaims(t *testing.T, a, b hubstore.Store) {
	ctx := context.Background()
	var all []string
	for i := range 10 {
		k := fmt.Sprintf("k%02d", i)
		ok(t, a.PutSubscription(ctx, sub(k, "https://a.example/")))
		all = append(all, k)
	}
	if _, err := a.Claim(ctx, "", time.Minute, 1); !errors.Is(err, hubstore.ErrInvalid) {
		t.Fatalf("empty node: %v", err)
	}
	ca := must(a.Claim(ctx, "A", time.Minute, 6))(t)
	if len(ca.Held) != 6 || ca.Subscriptions != 10 || ca.Nodes < 1 {
		t.Fatalf("A: %d held, %d subs, %d nodes", len(ca.Held), ca.Subscriptions, ca.Nodes)
	}
	if !slices.IsSorted(keysOf(ca.Held)) {
		t.Fatal("held not in key order")
	}
	cb := must(b.Claim(ctx, "B", time.Minute, 100))(t)
	if len(cb.Held) != 4 || cb.Nodes != 2 {
		t.Fatalf("B: %d held, %d nodes", len(cb.Held), cb.Nodes)
	}
	union := append(keysOf(ca.Held), keysOf(cb.Held)...)
	slices.Sort(union)
	if !slices.Equal(union, all) {
		t.Fatalf("claims not a partition: %v", union)
	}
	// Renewal returns the same set; max 0 takes nothing new.
	ca2 := must(a.Claim(ctx, "A", time.Minute, 0))(t)
	if !slices.Equal(keysOf(ca2.Held), keysOf(ca.Held)) {
		t.Fatalf("renewal changed A's set: %v", keysOf(ca2.Held))
	}
	ka, kb := ca.Held[0].Key, cb.Held[0].Key
	// Fencing: only the holder moves a cursor; it never moves backwards.
	refused := must(a.UpdateCursors(ctx, "A", []hubstore.CursorUpdate{
		{Key: ka, Cursor: 5, Attempt: 1, FirstFail: t0, LastError: "x", NextAt: t0.Add(time.Second)},
		{Key: kb, Cursor: 5}, {Key: "absent", Cursor: 1}}))(t)
	if !slices.Equal(refused, []string{kb, "absent"}) {
		t.Fatalf("refused %v", refused)
	}
	r := must(b.GetSubscription(ctx, ka))(t)
	if r.Cursor != 5 || r.Attempt != 1 || r.LastError != "x" || !sameTime(r.NextAt, t0.Add(time.Second)) || !sameTime(r.FirstFail, t0) {
		t.Fatalf("after update: %+v", r)
	}
	if r := must(b.GetSubscription(ctx, kb))(t); r.Cursor != 0 {
		t.Fatalf("non-holder moved the cursor to %d", r.Cursor)
	}
	must(a.UpdateCursors(ctx, "A", []hubstore.CursorUpdate{{Key: ka, Cursor: 3}}))(t)
	if r := must(a.GetSubscription(ctx, ka))(t); r.Cursor != 5 || r.Attempt != 0 || r.LastError != "" {
		t.Fatalf("backwards update: %+v", r)
	}
	// Claim returns the durable state.
	for _, h := range must(a.Claim(ctx, "A", time.Minute, 0))(t).Held {
		if h.Key == ka && h.Cursor != 5 {
			t.Fatalf("claim returned cursor %d", h.Cursor)
		}
	}
	// Release hands over at once.
	ok(t, a.Release(ctx, "A", ka, kb))
	cb = must(b.Claim(ctx, "B", time.Minute, 100))(t)
	if len(cb.Held) != 5 || !slices.Contains(keysOf(cb.Held), ka) {
		t.Fatalf("B after A released %s: %v", ka, keysOf(cb.Held))
	}
	// A deleted subscription is no longer held.
	ok(t, a.DeleteSubscription(ctx, ka))
	if cb := must(b.Claim(ctx, "B", time.Minute, 100))(t); slices.Contains(keysOf(cb.Held), ka) {
		t.Fatal("deleted subscription still held")
	}
	// Release all: A no longer alive, its subscriptions free.
	ok(t, a.Release(ctx, "A"))
	cb = must(b.Claim(ctx, "B", time.Minute, 100))(t)
	if len(cb.Held) != 9 || cb.Nodes != 1 {
		t.Fatalf("B after A left: %d held, %d nodes", len(cb.Held), cb.Nodes)
	}
}

// testWatch: changes through a are seen on b's channel; a may equal b.
func testWatch(t *testing.T, a, b hubstore.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := must(b.Watch(ctx))(t)
	expect := func(want hubstore.Event, what string) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		var got hubstore.Event
		for got&want != want {
			select {
			case ev, open := <-ch:
				if !open {
					t.Fatalf("%s: channel closed", what)
				}
				got |= ev
			case <-deadline:
				t.Fatalf("%s: no event %b (got %b)", what, want, got)
			}
		}
	}
	// Many changes while nobody reads: writers do not block, one value
	// (at least) follows.
	for i := range 100 {
		must(a.Append(ctx, "https://a.example/", entry(fmt.Sprint(i))))(t)
	}
	expect(hubstore.EventEntries, "append")
	ok(t, a.PutSubscription(ctx, sub("k1", "https://a.example/")))
	expect(hubstore.EventSubscriptions, "put subscription")
	j := must(a.AddJob(ctx, hubstore.Job{Key: "k2", Host: "h:80", Mode: "subscribe", Topic: "https://a.example/"}, 0, 0))(t)
	expect(hubstore.EventJobs, "add job")
	must(a.Subscribe(ctx, j.ID, sub("k2", "https://a.example/"), 0))(t)
	expect(hubstore.EventSubscriptions, "subscribe")
	ok(t, a.DeleteSubscription(ctx, "k1"))
	expect(hubstore.EventSubscriptions, "delete subscription")
	must(a.Claim(ctx, "A", time.Minute, 10))(t)
	ok(t, a.Release(ctx, "A", "k2"))
	expect(hubstore.EventSubscriptions, "release")
	cancel()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, open := <-ch:
			if !open {
				return
			}
		case <-deadline:
			t.Fatal("channel not closed after ctx ended")
		}
	}
}
