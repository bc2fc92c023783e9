package memstore

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// DB holds the states of any number of sets, in memory.
type DB struct {
	mu   sync.Mutex
	sets map[string]*state
}

// New returns an empty DB.
func New() *DB { return &DB{sets: map[string]*state{}} }

// Open returns a new handle on the state of set, created empty on first
// use. Handles on one set share its state (see the package documentation).
func (d *DB) Open(set string) *Store {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.sets[set]
	if st == nil {
		st = &state{inv: map[string]store.Resource{}, meta: map[string][]byte{},
			lead: make(chan struct{}, 1), watchers: map[chan struct{}]bool{}}
		d.sets[set] = st
	}
	return &Store{st: st, done: make(chan struct{})}
}

// state is one set's state.
type state struct {
	mu   sync.RWMutex
	inv  map[string]store.Resource
	keys []string // the inventory's paths, sorted
	jnl  []store.Change
	meta map[string][]byte

	lead chan struct{} // holds a value while a handle leads

	wmu      sync.Mutex
	watchers map[chan struct{}]bool
}

// notify signals every watcher, without blocking.
func (st *state) notify() {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	for ch := range st.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Store is a handle on one set's state. It implements store.Shared.
type Store struct {
	st *state

	mu      sync.Mutex
	closed  bool
	done    chan struct{} // closed by Close
	leading *lease
}

type lease struct {
	lost chan struct{}
	once sync.Once
}

var _ store.Shared = (*Store)(nil)

// page is how many records a paged read takes under one read lock.
const page = 1024

func (s *Store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	return nil
}

// Apply implements store.Store.
func (s *Store) Apply(ctx context.Context, b store.Batch) (first, last uint64, err error) {
	if err := s.check(ctx); err != nil {
		return 0, 0, err
	}
	for i := range b.Changes {
		c := &b.Changes[i]
		if !c.Kind.Valid() || c.Resource.Path == "" {
			return 0, 0, fmt.Errorf("%w: change %d: kind %q path %q", store.ErrConflict, i, c.Kind, c.Resource.Path)
		}
		if i > 0 && c.Time.Before(b.Changes[i-1].Time) {
			return 0, 0, fmt.Errorf("%w: change %d at %v follows one at %v", store.ErrTimeOrder, i, c.Time, b.Changes[i-1].Time)
		}
	}
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if b.Baseline && len(st.jnl) > 0 && len(b.Changes) > 0 {
		return 0, 0, fmt.Errorf("%w: a baseline batch after journal record %d", store.ErrConflict, len(st.jnl))
	}
	if len(st.jnl) > 0 && len(b.Changes) > 0 && b.Changes[0].Time.Before(st.jnl[len(st.jnl)-1].Time) {
		return 0, 0, fmt.Errorf("%w: %v is before seq %d", store.ErrTimeOrder, b.Changes[0].Time, len(st.jnl))
	}
	// Validate against the inventory as the batch goes, then apply.
	exists := map[string]bool{}
	has := func(p string) bool {
		if e, ok := exists[p]; ok {
			return e
		}
		_, ok := st.inv[p]
		return ok
	}
	for _, c := range b.Changes {
		p, e := c.Resource.Path, has(c.Resource.Path)
		if (c.Kind == rs.Created) == e {
			return 0, 0, fmt.Errorf("%w: %s of %q (in inventory: %v)", store.ErrConflict, c.Kind, p, e)
		}
		exists[p] = c.Kind != rs.Deleted
	}
	for _, r := range b.Touch {
		if !has(r.Path) {
			return 0, 0, fmt.Errorf("%w: touch of %q, not in the inventory", store.ErrConflict, r.Path)
		}
	}
	for _, c := range b.Changes {
		c.Time = c.Time.UTC()
		c.Resource = utc(c.Resource)
		if c.Kind == rs.Deleted {
			st.del(c.Resource.Path)
		} else {
			c.Resource.Changed = c.Time
			st.put(c.Resource)
		}
		if b.Baseline {
			continue
		}
		c.Seq = uint64(len(st.jnl)) + 1
		st.jnl = append(st.jnl, c)
		if first == 0 {
			first = c.Seq
		}
		last = c.Seq
	}
	for _, r := range b.Touch {
		st.put(utc(r))
	}
	for k, v := range b.Meta {
		if v == nil {
			delete(st.meta, k)
		} else {
			st.meta[k] = bytes.Clone(v)
		}
	}
	st.notify()
	return first, last, nil
}

func utc(r store.Resource) store.Resource {
	r.ModTime, r.LastMod, r.Changed = r.ModTime.UTC(), r.LastMod.UTC(), r.Changed.UTC()
	return r
}

func (st *state) put(r store.Resource) {
	if _, ok := st.inv[r.Path]; !ok {
		i, _ := slices.BinarySearch(st.keys, r.Path)
		st.keys = slices.Insert(st.keys, i, r.Path)
	}
	st.inv[r.Path] = r
}

func (st *state) del(p string) {
	delete(st.inv, p)
	if i, ok := slices.BinarySearch(st.keys, p); ok {
		st.keys = slices.Delete(st.keys, i, i+1)
	}
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, path string) (store.Resource, error) {
	if err := s.check(ctx); err != nil {
		return store.Resource{}, err
	}
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	r, ok := s.st.inv[path]
	if !ok {
		return store.Resource{}, fmt.Errorf("%w: %q", store.ErrNotFound, path)
	}
	return r, nil
}

// Resources implements store.Store: the snapshot is a copy taken when the
// iteration starts.
func (s *Store) Resources(ctx context.Context) iter.Seq2[store.Resource, error] {
	return func(yield func(store.Resource, error) bool) {
		if err := s.check(ctx); err != nil {
			yield(store.Resource{}, err)
			return
		}
		s.st.mu.RLock()
		snap := make([]store.Resource, len(s.st.keys))
		for i, k := range s.st.keys {
			snap[i] = s.st.inv[k]
		}
		s.st.mu.RUnlock()
		for i, r := range snap {
			if i%4096 == 4095 {
				if err := ctx.Err(); err != nil {
					yield(store.Resource{}, err)
					return
				}
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

// ResourcesIn implements store.Store.
func (s *Store) ResourcesIn(ctx context.Context, from, to string) iter.Seq2[store.Resource, error] {
	return func(yield func(store.Resource, error) bool) {
		next, inclusive := from, true
		for {
			if err := s.check(ctx); err != nil {
				yield(store.Resource{}, err)
				return
			}
			s.st.mu.RLock()
			i, found := slices.BinarySearch(s.st.keys, next)
			if found && !inclusive {
				i++
			}
			var pg []store.Resource
			for ; i < len(s.st.keys) && len(pg) < page; i++ {
				k := s.st.keys[i]
				if to != "" && k >= to {
					break
				}
				pg = append(pg, s.st.inv[k])
			}
			s.st.mu.RUnlock()
			for _, r := range pg {
				if !yield(r, nil) {
					return
				}
			}
			if len(pg) < page {
				return
			}
			next, inclusive = pg[len(pg)-1].Path, false
		}
	}
}

// Journal implements store.Store.
func (s *Store) Journal(ctx context.Context, from uint64) iter.Seq2[store.Change, error] {
	return s.journal(ctx, func([]store.Change) int { return int(max(from, 1)) - 1 }, time.Time{})
}

// JournalBetween implements store.Store.
func (s *Store) JournalBetween(ctx context.Context, from, until time.Time) iter.Seq2[store.Change, error] {
	return s.journal(ctx, func(j []store.Change) int {
		return sort.Search(len(j), func(i int) bool { return !j[i].Time.Before(from) })
	}, until)
}

func (s *Store) journal(ctx context.Context, start func([]store.Change) int, until time.Time) iter.Seq2[store.Change, error] {
	return func(yield func(store.Change, error) bool) {
		next, first := 0, true
		for {
			if err := s.check(ctx); err != nil {
				yield(store.Change{}, err)
				return
			}
			s.st.mu.RLock()
			if first {
				next, first = start(s.st.jnl), false
			}
			end := min(next+page, len(s.st.jnl))
			var pg []store.Change
			if next < end {
				pg = slices.Clone(s.st.jnl[next:end])
			}
			s.st.mu.RUnlock()
			for _, c := range pg {
				if !until.IsZero() && !c.Time.Before(until) {
					return
				}
				if !yield(c, nil) {
					return
				}
			}
			if len(pg) < page {
				return
			}
			next = end
		}
	}
}

// Stats implements store.Store.
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	if err := s.check(ctx); err != nil {
		return store.Stats{}, err
	}
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	out := store.Stats{Resources: len(s.st.inv)}
	if n := len(s.st.jnl); n > 0 {
		out.FirstSeq, out.LastSeq, out.LastTime = 1, uint64(n), s.st.jnl[n-1].Time
	}
	return out, nil
}

// GetMeta implements store.Store.
func (s *Store) GetMeta(ctx context.Context, key string) ([]byte, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	v, ok := s.st.meta[key]
	if !ok {
		return nil, fmt.Errorf("%w: meta %q", store.ErrNotFound, key)
	}
	return bytes.Clone(v), nil
}

// PutMeta implements store.Store.
func (s *Store) PutMeta(ctx context.Context, key string, value []byte) error {
	_, _, err := s.Apply(ctx, store.Batch{Meta: map[string][]byte{key: value}})
	return err
}

// Lead implements store.Shared.
func (s *Store) Lead(ctx context.Context) (lost <-chan struct{}, release func(), err error) {
	if err := s.check(ctx); err != nil {
		return nil, nil, err
	}
	select {
	case s.st.lead <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case <-s.done:
		return nil, nil, store.ErrClosed
	}
	l := &lease{lost: make(chan struct{})}
	s.mu.Lock()
	if s.closed { // closed while waiting for the role
		s.mu.Unlock()
		<-s.st.lead
		return nil, nil, store.ErrClosed
	}
	s.leading = l
	s.mu.Unlock()
	release = func() {
		l.once.Do(func() {
			s.mu.Lock()
			if s.leading == l {
				s.leading = nil
			}
			s.mu.Unlock()
			<-s.st.lead
		})
	}
	return l.lost, release, nil
}

// Lose ends the role held through this handle as a broken connection
// would: lost is closed and another handle may lead, while this handle
// stays open (for tests of a holder that must stop writing). It does
// nothing when the handle does not lead.
func (s *Store) Lose() {
	s.mu.Lock()
	l := s.leading
	s.leading = nil
	s.mu.Unlock()
	if l != nil {
		l.once.Do(func() {
			close(l.lost)
			<-s.st.lead
		})
	}
}

// Watch implements store.Shared.
func (s *Store) Watch(ctx context.Context) (<-chan struct{}, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	ch := make(chan struct{}, 1)
	st := s.st
	st.wmu.Lock()
	st.watchers[ch] = true
	st.wmu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
		case <-s.done:
		}
		st.wmu.Lock()
		delete(st.watchers, ch)
		close(ch)
		st.wmu.Unlock()
	}()
	return ch, nil
}

// Close implements store.Store. A role held is freed and its lost channel
// closed; Watch channels are closed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	l := s.leading
	s.leading = nil
	s.mu.Unlock()
	if l != nil {
		l.once.Do(func() {
			close(l.lost)
			<-s.st.lead
		})
	}
	return nil
}
