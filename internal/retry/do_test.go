package retry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// fast is a policy whose waits are short (no wall-clock assertion).
var fast = Policy{Retries: 3, BaseDelay: time.Microsecond, MaxDelay: time.Microsecond, MaxRetryAfter: time.Millisecond}

func TestDo(t *testing.T) {
	boom := errors.New("reset")
	for _, tc := range []struct {
		name      string
		p         Policy
		errs      []error // fn's answers in turn (then nil)
		classify  func(error) (bool, error)
		wantCalls int
		wantErr   error
		wantWaits []int // onRetry's n per wait
	}{
		{"first try", fast, nil, Classify, 1, nil, nil},
		{"two failures", fast, []error{boom, boom}, Classify, 3, nil, []int{1, 2}},
		{"spent", fast, []error{boom, boom, boom, boom, boom}, Classify, 4, boom, []int{1, 2, 3}},
		{"permanent stops", fast, []error{boom, Permanent(boom)}, Classify, 2, boom, []int{1}},
		{"404 stops", fast, []error{statusErr(503), statusErr(404)}, Classify, 2, statusErr(404), []int{1}},
		{"no retries", Policy{Retries: -1}, []error{boom}, Classify, 1, boom, nil},
		{"fn says no", fast, []error{boom}, func(err error) (bool, error) { return false, err }, 1, boom, nil},
		{"pending not counted", fast, []error{Pending(boom, time.Hour), Pending(boom, time.Hour), boom, boom, boom, Pending(boom, 0), boom},
			Classify, 7, boom, []int{0, 0, 1, 2, 3, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := 0
			var waits []int
			calls, err := Do(context.Background(), tc.p, func() (bool, error) {
				if i >= len(tc.errs) {
					return false, nil
				}
				i++
				return tc.classify(tc.errs[i-1])
			}, func(n int, err error, wait time.Duration) error {
				if wait > time.Millisecond {
					t.Errorf("wait %v above the policy's caps", wait)
				}
				waits = append(waits, n)
				return nil
			})
			if calls != tc.wantCalls || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("Do = %d, %v; want %d, %v", calls, err, tc.wantCalls, tc.wantErr)
			}
			if len(waits) != len(tc.wantWaits) {
				t.Fatalf("onRetry n = %v, want %v", waits, tc.wantWaits)
			}
			for k := range waits {
				if waits[k] != tc.wantWaits[k] {
					t.Errorf("onRetry n = %v, want %v", waits, tc.wantWaits)
					break
				}
			}
		})
	}
}

func TestDoOnRetryStops(t *testing.T) {
	stop := errors.New("deadline")
	calls, err := Do(context.Background(), fast, func() (bool, error) { return true, errors.New("x") },
		func(int, error, time.Duration) error { return stop })
	if calls != 1 || err != stop {
		t.Errorf("Do = %d, %v; want 1, the onRetry error", calls, err)
	}
}

func TestDoContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	// ctx ending while fn runs: ctx's error, not fn's.
	calls, err := Do(ctx, fast, func() (bool, error) { cancel(); return true, errors.New("x") }, nil)
	if calls != 1 || !errors.Is(err, context.Canceled) {
		t.Errorf("Do = %d, %v; want 1, context.Canceled", calls, err)
	}
	// ctx ending during the wait (Retry-After of an hour).
	ctx, cancel = context.WithCancel(context.Background())
	p := Policy{MaxRetryAfter: time.Hour}
	calls, err = Do(ctx, p, func() (bool, error) { return true, WithRetryAfter(errors.New("x"), time.Hour) },
		func(_ int, _ error, wait time.Duration) error {
			if wait != time.Hour {
				t.Errorf("wait %v, want the Retry-After", wait)
			}
			cancel()
			return nil
		})
	if calls != 1 || !errors.Is(err, context.Canceled) {
		t.Errorf("Do = %d, %v; want 1, context.Canceled", calls, err)
	}
}

func TestForever(t *testing.T) {
	if a := (Policy{Retries: Forever}).Attempts(); a < 1<<40 {
		t.Errorf("Forever allows %d attempts", a)
	}
	n := 0
	calls, err := Do(context.Background(), Policy{Retries: Forever, BaseDelay: 1, MaxDelay: 1}, func() (bool, error) {
		if n++; n < 100 {
			return true, errors.New("x")
		}
		return false, nil
	}, nil)
	if calls != 100 || err != nil {
		t.Errorf("Do = %d, %v", calls, err)
	}
}

func TestPermanentCause(t *testing.T) {
	x := errors.New("x")
	if c, ok := PermanentCause(fmt.Errorf("GET u: %w", WithRetryAfter(Permanent(x), time.Second))); !ok || c != x {
		t.Errorf("PermanentCause = %v, %v; want x, true", c, ok)
	}
	if _, ok := PermanentCause(finalErr{}); ok {
		t.Error("PermanentCause: only Permanent's own mark")
	}
	if _, ok := PermanentCause(nil); ok {
		t.Error("PermanentCause(nil)")
	}
}
