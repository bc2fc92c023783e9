package readstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
)

// ErrNoState: the state to open does not exist (no publish or serve has
// run with that state directory and set).
var ErrNoState = errors.New("no state")

// OpenTimeout is how long Open waits for a writer to release the state
// while it checks that the state can be used.
const OpenTimeout = 5 * time.Second

// Open returns a read-only Store over the state of set in dir
// (dir/set/state.db), never creating it: an absent state is a mistake of
// the caller's (ErrNoState). The state is opened once now, to report one
// that cannot be used (locked past OpenTimeout: store.ErrLocked; damaged:
// store.ErrCorrupt) before it is served, and then for each request only.
func Open(dir, set string) (*Store, error) {
	p := filepath.Join(dir, set, "state.db")
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w at %s", ErrNoState, p)
		}
		return nil, err
	}
	db, err := bolt.OpenSet(dir, set, &bolt.Options{LockTimeout: OpenTimeout, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	return newStore(dir, set), db.Close()
}

// Store is a read-only store.Store over the embedded state of
// publish (or serve): the state is opened (read-only: no write, no fsync)
// when a request needs it and closed when no request does, so that the
// writer can update it between requests: the embedded store admits one
// writer and no reader beside it.
//
// The requests in flight share one open, and it is never held longer
// than holdMax at a stretch: harvesters whose requests overlap would
// otherwise keep the shared lock for ever, and the writer, which polls for
// its exclusive lock (every 50 ms, bbolt) and gives up after a second
// (publish: the state is locked), would never get it. Past holdMax new
// requests wait, the ones in flight finish, the state is closed, and it
// stays closed for pause, twice the writer's poll interval, so that a
// waiting writer's poll lands in the gap. A writer thus waits at most
// holdMax plus the longest request in flight plus one poll; the
// harvesters, at most that pause (then the writer's run, up to lockWait).
type Store struct {
	dir, set string

	mu       sync.Mutex
	cond     *sync.Cond
	db       *bolt.DB // the open shared by the requests in flight
	refs     int
	busy     time.Time // opened since then with no gap of pause
	closed   time.Time // last closed then
	draining time.Time // held holdMax since then: no new request until it is closed
	resume   time.Time // closed for a writer until then
}

const (
	holdMax = 250 * time.Millisecond
	pause   = 100 * time.Millisecond
	// drainMax bounds the wait for the requests in flight: past it, a
	// new request joins them. The provider never nests its calls on a
	// store, but should a request wait for its own release, it is delayed,
	// not deadlocked.
	drainMax = time.Second
)

func newStore(dir, set string) *Store {
	s := &Store{dir: dir, set: set}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// ErrReadOnly is the error of every write.
var ErrReadOnly = errors.New("readstore: the state is read-only here")

// lockWait is how long a request waits for the writer to release the state.
const lockWait = 30 * time.Second

func (s *Store) open() (*bolt.DB, error) {
	return bolt.OpenSet(s.dir, s.set, &bolt.Options{LockTimeout: lockWait, ReadOnly: true})
}

// acquire returns the state, open, for one request; release gives it back.
func (s *Store) acquire() (*bolt.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		now := time.Now()
		if s.db != nil && s.draining.IsZero() && now.Sub(s.busy) >= holdMax {
			s.draining = now
		}
		switch {
		case s.db != nil && (s.draining.IsZero() || now.Sub(s.draining) >= drainMax):
			if !s.draining.IsZero() {
				// A request outlived the drain: the others join it, and
				// the next drain is tried after another holdMax.
				s.draining, s.busy = time.Time{}, now
			}
			s.refs++
			return s.db, nil
		case s.db == nil && !now.Before(s.resume):
			// Opened with s.mu held: the other requests would wait for
			// the lock anyway.
			db, err := s.open()
			if err != nil {
				return nil, err
			}
			s.db, s.refs = db, 1
			if now.Sub(s.closed) >= pause {
				s.busy = now // a writer had its chance
			}
			return db, nil
		default:
			// The pause, or the drain: woken when the pause ends, the
			// drain is too long (the timer takes s.mu, so its Broadcast
			// cannot come before this Wait) or the last request ends.
			until := s.resume
			if s.db != nil {
				until = s.draining.Add(drainMax)
			}
			tm := time.AfterFunc(until.Sub(now), func() {
				s.mu.Lock()
				s.cond.Broadcast()
				s.mu.Unlock()
			})
			s.cond.Wait()
			tm.Stop()
		}
	}
}

func (s *Store) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs--; s.refs > 0 {
		return
	}
	s.db.Close()
	s.db, s.closed = nil, time.Now()
	if !s.draining.IsZero() {
		s.draining = time.Time{}
		s.resume = time.Now().Add(pause)
	}
	s.cond.Broadcast()
}

var _ store.Store = (*Store)(nil)

// Apply fails: the state is read-only here.
func (s *Store) Apply(context.Context, store.Batch) (uint64, uint64, error) {
	return 0, 0, ErrReadOnly
}

// PutMeta fails: the state is read-only here.
func (s *Store) PutMeta(context.Context, string, []byte) error { return ErrReadOnly }

// Close does nothing: the state is open only while a request runs.
func (s *Store) Close() error { return nil }

func (s *Store) Get(ctx context.Context, path string) (store.Resource, error) {
	db, err := s.acquire()
	if err != nil {
		return store.Resource{}, err
	}
	defer s.release()
	return db.Get(ctx, path)
}

func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	db, err := s.acquire()
	if err != nil {
		return store.Stats{}, err
	}
	defer s.release()
	return db.Stats(ctx)
}

func (s *Store) GetMeta(ctx context.Context, key string) ([]byte, error) {
	db, err := s.acquire()
	if err != nil {
		return nil, err
	}
	defer s.release()
	return db.GetMeta(ctx, key)
}

// seq runs one iteration of db's with the state open.
func seq[T any](s *Store, seq func(*bolt.DB) iter.Seq2[T, error]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		db, err := s.acquire()
		if err != nil {
			var zero T
			yield(zero, err)
			return
		}
		defer s.release()
		for v, err := range seq(db) {
			if !yield(v, err) {
				return
			}
		}
	}
}

func (s *Store) Resources(ctx context.Context) iter.Seq2[store.Resource, error] {
	return seq(s, func(db *bolt.DB) iter.Seq2[store.Resource, error] { return db.Resources(ctx) })
}

func (s *Store) ResourcesIn(ctx context.Context, from, to string) iter.Seq2[store.Resource, error] {
	return seq(s, func(db *bolt.DB) iter.Seq2[store.Resource, error] { return db.ResourcesIn(ctx, from, to) })
}

func (s *Store) Journal(ctx context.Context, from uint64) iter.Seq2[store.Change, error] {
	return seq(s, func(db *bolt.DB) iter.Seq2[store.Change, error] { return db.Journal(ctx, from) })
}

func (s *Store) JournalBetween(ctx context.Context, from, until time.Time) iter.Seq2[store.Change, error] {
	return seq(s, func(db *bolt.DB) iter.Seq2[store.Change, error] { return db.JournalBetween(ctx, from, until) })
}
