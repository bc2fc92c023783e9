package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/resourcesync-go/resourcesync/source/store"
)

// leadClass is the first key of the scanner role's advisory lock
// (pg_try_advisory_lock(leadClass, set id)); "rssc".
const leadClass int32 = 0x72737363

// Intervals of Lead: how often a waiting Lead tries the lock, and how often
// a holder checks its connection (a failed check closes lost). Variables
// for tests.
var (
	leadRetry = 300 * time.Millisecond
	leadCheck = time.Second
	// watchRetry is the pause between attempts to LISTEN again after the
	// Watch connection broke.
	watchRetry = 500 * time.Millisecond
)

// dedicated takes a connection out of the pool for Lead or Watch: it is
// never returned, only closed.
func (s *Store) dedicated(ctx context.Context) (*pgx.Conn, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return c.Hijack(), nil
}

func closeConn(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c.Close(ctx)
}

// lead is one holding of the scanner role.
type lead struct {
	s      *Store
	conn   *pgx.Conn
	epoch  int64
	lost   chan struct{}
	stop   chan struct{}
	done   chan struct{} // the monitor has exited
	broken bool          // set by the monitor before done: conn is closed
	once   sync.Once
}

// Lead implements store.Shared: pg_try_advisory_lock(leadClass, set id) on
// a connection of its own, tried every leadRetry until it succeeds or ctx
// ends. A session-level advisory lock lives as long as its connection: a
// holder that exits or is killed loses it as soon as the server sees the
// connection close (at once on a loopback or a live host; after the TCP
// keepalive probes of Options.KeepAlive when the host vanished). The holder
// checks its connection every leadCheck and closes lost when a check fails.
// Connection errors while waiting are retried; Lead returns ctx.Err() when
// ctx ends and store.ErrClosed when the Store is closed.
func (s *Store) Lead(ctx context.Context) (lost <-chan struct{}, release func(), err error) {
	if err := s.check(ctx); err != nil {
		return nil, nil, err
	}
	var conn *pgx.Conn
	fail := func(err error) (<-chan struct{}, func(), error) {
		if conn != nil {
			closeConn(conn)
		}
		return nil, nil, err
	}
	for {
		if conn == nil {
			conn, err = s.dedicated(ctx)
			if err != nil {
				conn = nil
			}
		}
		if conn != nil {
			var ok bool
			err = conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, leadClass, s.id).Scan(&ok)
			if err == nil && ok {
				break
			}
			if err != nil { // a broken connection: take another
				closeConn(conn)
				conn = nil
			}
		}
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		t := time.NewTimer(leadRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return fail(ctx.Err())
		case <-s.done:
			t.Stop()
			return fail(store.ErrClosed)
		case <-t.C:
		}
	}
	// A new epoch fences writes of earlier holders that have not noticed
	// their loss yet.
	var epoch int64
	if err := conn.QueryRow(ctx, `UPDATE rs_sets SET lead_epoch = lead_epoch + 1 WHERE id = $1 RETURNING lead_epoch`, s.id).Scan(&epoch); err != nil {
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		return fail(s.wrap(ctx, "lead", err))
	}
	l := &lead{s: s, conn: conn, epoch: epoch, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return fail(store.ErrClosed)
	}
	s.leads[l] = struct{}{}
	s.epoch.Store(epoch)
	s.bg.Add(1)
	s.mu.Unlock()
	go l.monitor()
	return l.lost, l.release, nil
}

func (l *lead) monitor() {
	defer l.s.bg.Done()
	defer close(l.done)
	t := time.NewTicker(leadCheck)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*leadCheck)
		_, err := l.conn.Exec(ctx, `SELECT 1`)
		cancel()
		if err != nil {
			l.broken = true
			closeConn(l.conn)
			close(l.lost)
			return
		}
	}
}

// release gives the role back: unlock, and close the connection.
func (l *lead) release() {
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		l.s.mu.Lock()
		delete(l.s.leads, l)
		l.s.mu.Unlock()
		l.s.epoch.CompareAndSwap(l.epoch, 0)
		if !l.broken {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			l.conn.Exec(ctx, `SELECT pg_advisory_unlock($1, $2)`, leadClass, l.s.id)
			cancel()
			closeConn(l.conn)
		}
	})
}

// Watch implements store.Shared: Apply and PutMeta send pg_notify in their
// transaction, delivered at commit, and one connection per Store LISTENs
// on the set's channel (opened by the first Watch, kept until Close) and
// feeds every Watch channel, each of capacity 1 (coalesced). When that
// connection breaks, the listener connects and LISTENs again (every
// watchRetry until it succeeds) and then sends one value on every channel,
// since commits may have been missed meanwhile. A channel is closed when
// its ctx ends or the Store is closed.
func (s *Store) Watch(ctx context.Context) (<-chan struct{}, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if !s.listening {
		conn, err := s.listen(ctx)
		if err != nil {
			return nil, s.wrap(ctx, "watch", err)
		}
		if !s.background() {
			closeConn(conn)
			return nil, store.ErrClosed
		}
		s.listening = true
		go s.listenLoop(conn)
	}
	if !s.background() {
		return nil, store.ErrClosed
	}
	ch := make(chan struct{}, 1)
	s.subs[ch] = struct{}{}
	go func() {
		defer s.bg.Done()
		select {
		case <-ctx.Done():
		case <-s.done:
		}
		s.unsubscribe(ch)
	}()
	return ch, nil
}

// background registers a goroutine that Close waits for; false after
// Close.
func (s *Store) background() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return false
	}
	s.bg.Add(1)
	return true
}

func (s *Store) unsubscribe(ch chan struct{}) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, ok := s.subs[ch]; ok {
		delete(s.subs, ch)
		close(ch)
	}
}

func (s *Store) broadcast() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// listenLoop waits for notifications on conn until the Store closes,
// listening again on a new connection when conn breaks.
func (s *Store) listenLoop(conn *pgx.Conn) {
	defer s.bg.Done()
	defer func() {
		s.wmu.Lock()
		for ch := range s.subs {
			delete(s.subs, ch)
			close(ch)
		}
		s.wmu.Unlock()
	}()
	for {
		_, err := conn.WaitForNotification(s.life)
		if err == nil {
			s.broadcast()
			continue
		}
		closeConn(conn)
		for {
			if s.life.Err() != nil {
				return
			}
			if conn, err = s.listen(s.life); err == nil {
				s.broadcast()
				break
			}
			t := time.NewTimer(watchRetry)
			select {
			case <-s.done:
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// listen returns a dedicated connection that LISTENs on the set's channel.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := s.dedicated(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{s.channel()}.Sanitize()); err != nil {
		closeConn(conn)
		return nil, err
	}
	return conn, nil
}
