package watchdog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Errors matched with errors.Is.
var (
	ErrStalled = errors.New("response stalled")
	ErrTooSlow = errors.New("response too slow")
)

// DefaultWindow is the averaging window when Limits.Window is 0.
const DefaultWindow = 30 * time.Second

// Limits says when a response is abandoned. The zero value never does.
type Limits struct {
	// Idle is the longest wait for the response's headers or for any
	// next byte of its body (0: no limit).
	Idle time.Duration
	// MinRate is the least average body rate, in bytes per second, over
	// each Window since the body started (0: no limit). A body that ends
	// within its first window is never too slow.
	MinRate float64
	// Window is the averaging window of MinRate (default DefaultWindow).
	Window time.Duration
}

func (l Limits) active() bool { return l.Idle > 0 || l.MinRate > 0 }

func (l Limits) window() time.Duration {
	if l.Window > 0 {
		return l.Window
	}
	return DefaultWindow
}

// Watch watches one request. A nil *Watch watches nothing.
type Watch struct {
	l       Limits
	cancel  context.CancelFunc
	idle    *time.Timer
	n       atomic.Int64 // body bytes read
	started atomic.Bool  // Body was called: the headers arrived

	mu     sync.Mutex
	win    *time.Timer
	lastN  int64
	reason error
	done   bool
}

// Start returns a context for one request and the Watch that cancels it;
// when l limits nothing it returns ctx and nil. Call Stop when the
// response has been read.
func Start(ctx context.Context, l Limits) (context.Context, *Watch) {
	if !l.active() {
		return ctx, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &Watch{l: l, cancel: cancel}
	if l.Idle > 0 {
		w.idle = time.AfterFunc(l.Idle, func() {
			if w.started.Load() {
				w.trip(fmt.Errorf("%w: no bytes for %v", ErrStalled, l.Idle))
			} else {
				w.trip(fmt.Errorf("%w: timeout awaiting response headers (%v)", ErrStalled, l.Idle))
			}
		})
	}
	return ctx, w
}

func (w *Watch) trip(err error) {
	w.mu.Lock()
	if !w.done && w.reason == nil {
		w.reason = err
	}
	w.mu.Unlock()
	w.cancel()
}

// Body wraps a response body: every read rearms the idle limit, and the
// rate windows start now.
func (w *Watch) Body(r io.Reader) io.Reader {
	if w == nil {
		return r
	}
	w.started.Store(true)
	if w.idle != nil {
		w.idle.Reset(w.l.Idle)
	}
	if w.l.MinRate > 0 {
		win := w.l.window()
		w.mu.Lock()
		w.win = time.AfterFunc(win, w.checkRate)
		w.mu.Unlock()
	}
	return &reader{r, w}
}

func (w *Watch) checkRate() {
	win := w.l.window()
	n := w.n.Load()
	w.mu.Lock()
	got := n - w.lastN
	w.lastN = n
	done := w.done
	w.mu.Unlock()
	if done {
		return
	}
	if float64(got) < w.l.MinRate*win.Seconds() {
		w.trip(fmt.Errorf("%w: %d bytes in %v, below %.0f bytes/s", ErrTooSlow, got, win, w.l.MinRate))
		return
	}
	w.mu.Lock()
	if !w.done {
		w.win.Reset(win)
	}
	w.mu.Unlock()
}

// Err returns why the Watch cancelled the request (matching ErrStalled
// or ErrTooSlow), or nil when it did not.
func (w *Watch) Err() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reason
}

// Stop releases the Watch's timers and its context. Err stays valid.
func (w *Watch) Stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.done = true
	if w.win != nil {
		w.win.Stop()
	}
	w.mu.Unlock()
	if w.idle != nil {
		w.idle.Stop()
	}
	w.cancel()
}

type reader struct {
	r io.Reader
	w *Watch
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.w.n.Add(int64(n))
		if r.w.idle != nil {
			r.w.idle.Reset(r.w.l.Idle)
		}
	}
	return n, err
}
