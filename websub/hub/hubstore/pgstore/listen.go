package pgstore

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// channel is the NOTIFY channel of the changes Watch reports; the payload
// is the hubstore.Event in decimal. The writing transactions call
// pg_notify themselves, so a notification is sent if and only if the
// change commits (and PostgreSQL folds identical ones of a transaction).
const channel = "resourcesync_hub"

const allEvents = hubstore.EventEntries | hubstore.EventSubscriptions | hubstore.EventJobs

// listener owns a connection of its own (not from the pool: LISTEN
// belongs to a session) and passes notifications to emit. When the
// connection breaks it reconnects with backoff, listens again and emits
// every event once, since what was sent meanwhile is lost.
type listener struct {
	connect func(ctx context.Context) (*pgx.Conn, error)
	emit    func(hubstore.Event)

	ready chan struct{} // closed after the first LISTEN (or attempt)
	stop  context.CancelFunc
	done  chan struct{}

	mu   sync.Mutex
	conn *pgx.Conn // the current connection (tests break it)
}

func startListener(connect func(ctx context.Context) (*pgx.Conn, error), emit func(hubstore.Event)) *listener {
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{connect: connect, emit: emit, ready: make(chan struct{}), stop: cancel, done: make(chan struct{})}
	go l.run(ctx)
	return l
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	ready := sync.OnceFunc(func() { close(l.ready) })
	defer ready()
	backoff := 50 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		conn, err := l.connect(ctx)
		if err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+channel); err != nil {
				conn.Close(context.Background())
			}
		}
		if err != nil {
			// Watch returns all the same; the first successful LISTEN
			// emits every event, which covers what was missed.
			ready()
			first = false
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		l.mu.Lock()
		l.conn = conn
		l.mu.Unlock()
		ready()
		if !first {
			l.emit(allEvents)
		}
		first = false
		for {
			wctx, cancel := context.WithTimeout(ctx, listenCheck)
			n, err := conn.WaitForNotification(wctx)
			cancel()
			if err != nil {
				if ctx.Err() == nil && wctx.Err() != nil && ping(ctx, conn) == nil {
					continue // quiet, and alive
				}
				break
			}
			ev, err := strconv.ParseUint(n.Payload, 10, 8)
			if err != nil || hubstore.Event(ev)&^allEvents != 0 {
				ev = uint64(allEvents) // not ours to parse: assume anything changed
			}
			l.emit(hubstore.Event(ev))
		}
		l.mu.Lock()
		l.conn = nil
		l.mu.Unlock()
		conn.Close(context.Background())
	}
}

// backendPID is the listening session's process ID (0 when not
// connected), for tests that terminate it.
func (l *listener) backendPID() uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return 0
	}
	return l.conn.PgConn().PID()
}

func (l *listener) close() {
	l.stop()
	<-l.done
}

// listenCheck is how long the listening connection may stay quiet before
// it is checked with a query. It is idle most of the time, and an idle
// flow is what NATs, firewalls and load balancers drop without a word:
// without a check, a node would wait on a dead connection (until TCP
// keepalive gives up, up to hours) and never hear of what other nodes
// publish. A variable for tests.
var listenCheck = 10 * time.Second

// ping checks a connection with a round trip, bounded.
func ping(ctx context.Context, conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, max(listenCheck/2, time.Second))
	defer cancel()
	_, err := conn.Exec(ctx, `SELECT 1`)
	return err
}
