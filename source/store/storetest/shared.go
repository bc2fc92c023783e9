package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// Takeover is how soon a waiting Lead must get the role after the holder
// released it or closed its Store.
const Takeover = 2 * time.Second

// RunShared runs the contract cases of store.Shared. open returns two
// handles on the same, new, empty state (two Stores, as two processes
// would open it); the suite closes them.
func RunShared(t *testing.T, open func(t *testing.T) (a, b store.Shared)) {
	ctx := context.Background()
	pair := func(t *testing.T) (store.Shared, store.Shared) {
		a, b := open(t)
		t.Cleanup(func() { a.Close(); b.Close() })
		return a, b
	}
	lead := func(t *testing.T, s store.Shared, within time.Duration) (<-chan struct{}, func()) {
		t.Helper()
		lctx, cancel := context.WithTimeout(ctx, within)
		defer cancel()
		start := time.Now()
		lost, release, err := s.Lead(lctx)
		if err != nil {
			t.Fatalf("Lead: %v after %v, want the role within %v", err, time.Since(start).Round(time.Millisecond), within)
		}
		return lost, release
	}

	t.Run("LeadExclusive", func(t *testing.T) {
		a, b := pair(t)
		lost, release := lead(t, a, 5*time.Second)
		// b waits while a holds the role, and gives up with ctx.Err().
		wctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
		_, _, err := b.Lead(wctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("second Lead while held: %v, want context.DeadlineExceeded", err)
		}
		// A Lead on the holder's own Store waits too: one holder in all.
		wctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
		_, _, err = a.Lead(wctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("second Lead on the holder's Store: %v, want context.DeadlineExceeded", err)
		}
		// A cancel (not a deadline) is reported as such.
		cctx, cancel := context.WithCancel(ctx)
		go func() { time.Sleep(100 * time.Millisecond); cancel() }()
		if _, _, err := b.Lead(cctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("canceled Lead: %v, want context.Canceled", err)
		}
		got := make(chan error, 1)
		go func() {
			lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_, rel, err := b.Lead(lctx)
			if err == nil {
				defer rel()
			}
			got <- err
		}()
		time.Sleep(200 * time.Millisecond)
		select {
		case err := <-got:
			t.Fatalf("b led while a held the role: %v", err)
		default:
		}
		start := time.Now()
		release()
		release() // idempotent
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("b.Lead after release: %v", err)
			}
			t.Logf("takeover after release: %v", time.Since(start).Round(time.Millisecond))
		case <-time.After(Takeover):
			t.Fatalf("b did not lead within %v of the release", Takeover)
		}
		select {
		case <-lost:
			t.Errorf("lost closed after a release")
		default:
		}
	})

	t.Run("LeadAfterClose", func(t *testing.T) {
		a, b := pair(t)
		lead(t, a, 5*time.Second)
		got := make(chan error, 1)
		go func() {
			lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_, _, err := b.Lead(lctx)
			got <- err
		}()
		time.Sleep(200 * time.Millisecond)
		start := time.Now()
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("b.Lead after the holder's Close: %v", err)
			}
			t.Logf("takeover after Close: %v", time.Since(start).Round(time.Millisecond))
		case <-time.After(Takeover):
			t.Fatalf("b did not lead within %v of the holder's Close", Takeover)
		}
		if _, _, err := a.Lead(ctx); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Lead after Close: %v, want ErrClosed", err)
		}
	})

	t.Run("Watch", func(t *testing.T) {
		a, b := pair(t)
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ch, err := b.Watch(wctx)
		if err != nil {
			t.Fatal(err)
		}
		quiet := func() {
			t.Helper()
			time.Sleep(100 * time.Millisecond)
			select {
			case _, ok := <-ch:
				if !ok {
					t.Fatal("Watch channel closed early")
				}
			default:
			}
		}
		expect := func(what string) {
			t.Helper()
			select {
			case _, ok := <-ch:
				if !ok {
					t.Fatalf("after %s: Watch channel closed", what)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no Watch value within 5s after %s", what)
			}
		}
		quiet()
		if _, _, err := a.Apply(ctx, store.Batch{Changes: []store.Change{ch1(rs.Created, "a")}}); err != nil {
			t.Fatal(err)
		}
		expect("Apply")
		quiet()
		if err := a.PutMeta(ctx, "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
		expect("PutMeta")
		// Many commits, coalesced: at least one value, and one after the last.
		for i := range 20 {
			if err := a.PutMeta(ctx, "k", []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		expect("20 PutMeta")
		// A second watcher of the same Store sees commits too.
		ch2, err := b.Watch(wctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Apply(ctx, store.Batch{Changes: []store.Change{ch1(rs.Updated, "a")}}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ch2:
		case <-time.After(5 * time.Second):
			t.Fatal("second watcher: no value within 5s after Apply")
		}
		expect("Apply (first watcher)")
	})

	t.Run("WatchEnds", func(t *testing.T) {
		a, b := pair(t)
		wctx, cancel := context.WithCancel(ctx)
		ch, err := b.Watch(wctx)
		if err != nil {
			t.Fatal(err)
		}
		ch2, err := b.Watch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		closedWithin(t, ch, "ctx ended")
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		closedWithin(t, ch2, "Store closed")
		if _, err := b.Watch(ctx); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Watch after Close: %v, want ErrClosed", err)
		}
		_ = a
	})
}

func closedWithin(t *testing.T, ch <-chan struct{}, why string) {
	t.Helper()
	deadline := time.After(Takeover)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("Watch channel not closed within %v after %s", Takeover, why)
		}
	}
}

func ch1(kind rs.Change, path string) store.Change {
	return store.Change{Kind: kind, Time: T0, Resource: Res(path, string(kind))}
}
