package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// channel is the NOTIFY channel of every commit that Watch reports. The
// writing transactions call pg_notify(channel, what) themselves, so a
// notification is sent if and only if the change commits.
const channel = "resourcesync_hub"

// listener owns one connection of its own (not from the pool: LISTEN is a
// property of a session) and fans notifications out to the watchers. After
// the connection breaks it reconnects with backoff, listens again and
// signals every watcher once, since notifications sent meanwhile are lost.
type listener struct {
	connect func(ctx context.Context) (*pgx.Conn, error)

	mu       sync.Mutex
	watchers map[*watcher]struct{}
	closed   bool

	ready chan struct{} // closed once the first LISTEN succeeded (or failed for good)
	stop  context.CancelFunc
	done  chan struct{}
}

type watcher struct {
	c    chan struct{}
	want func(payload string) bool // nil: every notification
}

func (w *watcher) signal() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

func startListener(connect func(ctx context.Context) (*pgx.Conn, error)) *listener {
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{connect: connect, watchers: map[*watcher]struct{}{}, ready: make(chan struct{}), stop: cancel, done: make(chan struct{})}
	go l.run(ctx)
	return l
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	readyOnce := sync.OnceFunc(func() { close(l.ready) })
	defer readyOnce()
	backoff := 50 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		conn, err := l.connect(ctx)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+channel)
			if err != nil {
				conn.Close(context.Background())
			}
		}
		if err != nil {
			readyOnce() // Watch works (with the resignal after reconnecting) even if the first try failed
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		readyOnce()
		if !first {
			l.broadcast(nil) // whatever was sent while we were away
		}
		first = false
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				break
			}
			l.broadcast(&n.Payload)
		}
		conn.Close(context.Background())
	}
}

// broadcast signals the watchers that want payload (all of them when
// payload is nil).
func (l *listener) broadcast(payload *string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := range l.watchers {
		if payload == nil || w.want == nil || w.want(*payload) {
			w.signal()
		}
	}
}

// watch registers a watcher until ctx ends or the listener closes; the
// channel is then closed.
func (l *listener) watch(ctx context.Context, want func(string) bool) <-chan struct{} {
	w := &watcher{c: make(chan struct{}, 1), want: want}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		close(w.c)
		return w.c
	}
	l.watchers[w] = struct{}{}
	l.mu.Unlock()
	<-l.ready
	go func() {
		select {
		case <-ctx.Done():
		case <-l.done:
		}
		l.mu.Lock()
		if _, ok := l.watchers[w]; ok {
			delete(l.watchers, w)
			close(w.c)
		}
		l.mu.Unlock()
	}()
	return w.c
}

func (l *listener) close() {
	l.stop()
	<-l.done
	l.mu.Lock()
	l.closed = true
	for w := range l.watchers {
		delete(l.watchers, w)
		close(w.c)
	}
	l.mu.Unlock()
}
