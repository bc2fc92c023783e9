package memstore

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/internal/shared"
)

// page is how many records an iterator copies under the lock at a time.
const page = 256

// DB is one in-memory hub state.
type DB struct {
	mu       sync.Mutex
	topics   map[string]*topicLog
	subs     map[string]hubstore.Subscription
	jobs     map[uint64]hubstore.Job
	nextJob  uint64
	dead     map[uint64]hubstore.DeadLetter
	nextDead uint64
	leases   *shared.Leases
	handles  map[*Store]struct{}
}

type topicLog struct {
	head    uint64
	entries []hubstore.Entry // ascending Seq; pruned ones removed from the front
}

// New returns an empty state whose leases run on the clock now (time.Now
// if nil).
func New(now func() time.Time) *DB {
	return &DB{
		topics:  map[string]*topicLog{},
		subs:    map[string]hubstore.Subscription{},
		jobs:    map[uint64]hubstore.Job{},
		dead:    map[uint64]hubstore.DeadLetter{},
		leases:  shared.NewLeases(now),
		handles: map[*Store]struct{}{},
	}
}

// Open returns a new handle on db.
func (db *DB) Open() *Store {
	s := &Store{db: db}
	db.mu.Lock()
	db.handles[s] = struct{}{}
	db.mu.Unlock()
	return s
}

// Open returns the only handle on a new state.
func Open() *Store { return New(nil).Open() }

// Store is a handle on a DB.
type Store struct {
	db     *DB
	w      shared.Watchers
	closed atomic.Bool
}

var _ hubstore.Store = (*Store)(nil)

// lock takes the DB lock after checking the handle and ctx.
func (s *Store) lock(ctx context.Context) error {
	if s.closed.Load() {
		return hubstore.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.db.mu.Lock()
	return nil
}

func (s *Store) unlock() { s.db.mu.Unlock() }

// notify signals every handle's watchers. The DB lock must not be held.
func (db *DB) notify(ev hubstore.Event) {
	db.mu.Lock()
	hs := make([]*Store, 0, len(db.handles))
	for h := range db.handles {
		hs = append(hs, h)
	}
	db.mu.Unlock()
	for _, h := range hs {
		h.w.Notify(ev)
	}
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("memstore: %w: "+format, append([]any{hubstore.ErrInvalid}, a...)...)
}

func cloneEntry(e hubstore.Entry) hubstore.Entry {
	e.Links = slices.Clone(e.Links)
	e.Body = slices.Clone(e.Body)
	e.Published = shared.Time(e.Published)
	return e
}

func normSub(r hubstore.Subscription) hubstore.Subscription {
	r.Expires, r.FirstFail, r.NextAt = shared.Time(r.Expires), shared.Time(r.FirstFail), shared.Time(r.NextAt)
	return r
}

func normJob(j hubstore.Job) hubstore.Job {
	j.NextAt = shared.Time(j.NextAt)
	return j
}

func cloneDead(d hubstore.DeadLetter) hubstore.DeadLetter {
	d.Links = slices.Clone(d.Links)
	d.Body = slices.Clone(d.Body)
	d.Published, d.FirstFail, d.At = shared.Time(d.Published), shared.Time(d.FirstFail), shared.Time(d.At)
	return d
}

func (s *Store) Append(ctx context.Context, topic string, e hubstore.Entry) (uint64, error) {
	if topic == "" {
		return 0, invalid("empty topic")
	}
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	t := s.db.topics[topic]
	if t == nil {
		t = &topicLog{}
		s.db.topics[topic] = t
	}
	t.head++
	e = cloneEntry(e)
	e.Seq = t.head
	t.entries = append(t.entries, e)
	seq := t.head
	s.unlock()
	s.db.notify(hubstore.EventEntries)
	return seq, nil
}

func (s *Store) Head(ctx context.Context, topic string) (uint64, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.unlock()
	if t := s.db.topics[topic]; t != nil {
		return t.head, nil
	}
	return 0, nil
}

func (s *Store) Heads(ctx context.Context) (map[string]uint64, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.unlock()
	out := make(map[string]uint64, len(s.db.topics))
	for k, t := range s.db.topics {
		out[k] = t.head
	}
	return out, nil
}

func (s *Store) Entries(ctx context.Context, topic string, after uint64, max int) ([]hubstore.Entry, error) {
	if max < 1 {
		return nil, invalid("max %d < 1", max)
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.unlock()
	t := s.db.topics[topic]
	if t == nil {
		return nil, nil
	}
	i, _ := slices.BinarySearchFunc(t.entries, after+1, func(e hubstore.Entry, seq uint64) int { return cmp.Compare(e.Seq, seq) })
	var out []hubstore.Entry
	for ; i < len(t.entries) && len(out) < max; i++ {
		out = append(out, cloneEntry(t.entries[i]))
	}
	return out, nil
}

func (s *Store) Prune(ctx context.Context, topic string, below uint64) (int, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.unlock()
	t := s.db.topics[topic]
	if t == nil {
		return 0, nil
	}
	i, _ := slices.BinarySearchFunc(t.entries, below, func(e hubstore.Entry, seq uint64) int { return cmp.Compare(e.Seq, seq) })
	t.entries = slices.Delete(t.entries, 0, i)
	return i, nil
}

func (s *Store) PutSubscription(ctx context.Context, r hubstore.Subscription) error {
	if r.Key == "" || r.Topic == "" {
		return invalid("subscription without key or topic")
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	s.db.subs[r.Key] = normSub(r)
	s.unlock()
	s.db.notify(hubstore.EventSubscriptions)
	return nil
}

func (s *Store) GetSubscription(ctx context.Context, key string) (hubstore.Subscription, error) {
	if err := s.lock(ctx); err != nil {
		return hubstore.Subscription{}, err
	}
	defer s.unlock()
	r, ok := s.db.subs[key]
	if !ok {
		return r, fmt.Errorf("memstore: subscription %q: %w", key, hubstore.ErrNotFound)
	}
	return r, nil
}

func (s *Store) DeleteSubscription(ctx context.Context, key string) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	_, ok := s.db.subs[key]
	delete(s.db.subs, key)
	s.db.leases.Drop(key)
	s.unlock()
	if ok {
		s.db.notify(hubstore.EventSubscriptions)
	}
	return nil
}

// sortedKeys returns the keys of topic's subscriptions ("" all) > after,
// sorted. The lock must be held.
func (db *DB) sortedKeys(topic, after string) []string {
	keys := make([]string, 0, len(db.subs))
	for k, r := range db.subs {
		if (topic == "" || r.Topic == topic) && k > after {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func (s *Store) Subscriptions(ctx context.Context, topic string) iter.Seq2[hubstore.Subscription, error] {
	return func(yield func(hubstore.Subscription, error) bool) {
		after := ""
		for {
			if err := s.lock(ctx); err != nil {
				yield(hubstore.Subscription{}, err)
				return
			}
			keys := s.db.sortedKeys(topic, after)
			keys = keys[:min(len(keys), page)]
			recs := make([]hubstore.Subscription, len(keys))
			for i, k := range keys {
				recs[i] = s.db.subs[k]
			}
			s.unlock()
			for _, r := range recs {
				if !yield(r, nil) {
					return
				}
			}
			if len(recs) < page {
				return
			}
			after = recs[len(recs)-1].Key
		}
	}
}

func (s *Store) CountSubscriptions(ctx context.Context, topic string) (int, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.unlock()
	n := 0
	for _, r := range s.db.subs {
		if r.Topic == topic {
			n++
		}
	}
	return n, nil
}

func (s *Store) Counts(ctx context.Context) (hubstore.Counts, error) {
	if err := s.lock(ctx); err != nil {
		return hubstore.Counts{}, err
	}
	defer s.unlock()
	return hubstore.Counts{Subscriptions: len(s.db.subs), Jobs: len(s.db.jobs), DeadLetters: len(s.db.dead)}, nil
}

func (s *Store) Subscribe(ctx context.Context, jobID uint64, r hubstore.Subscription, maxPerTopic int) (hubstore.Subscription, error) {
	if r.Key == "" || r.Topic == "" {
		return r, invalid("subscription without key or topic")
	}
	if err := s.lock(ctx); err != nil {
		return r, err
	}
	_, hadJob := s.db.jobs[jobID]
	delete(s.db.jobs, jobID)
	s.db.leases.DropJob(jobID)
	cur, ok := s.db.subs[r.Key]
	var err error
	if ok {
		cur.Topic, cur.Callback, cur.Secret, cur.Lease, cur.Expires = r.Topic, r.Callback, r.Secret, r.Lease, shared.Time(r.Expires)
		s.db.subs[r.Key] = cur
	} else {
		n := 0
		for _, o := range s.db.subs {
			if o.Topic == r.Topic {
				n++
			}
		}
		if maxPerTopic > 0 && n >= maxPerTopic {
			err = fmt.Errorf("memstore: %w", hubstore.ErrTopicFull)
		} else {
			var head uint64
			if t := s.db.topics[r.Topic]; t != nil {
				head = t.head
			}
			cur = normSub(hubstore.Subscription{Key: r.Key, Topic: r.Topic, Callback: r.Callback, Secret: r.Secret,
				Lease: r.Lease, Expires: r.Expires, Cursor: head})
			s.db.subs[r.Key] = cur
		}
	}
	s.unlock()
	ev := hubstore.Event(0)
	if err == nil {
		ev |= hubstore.EventSubscriptions
	}
	if hadJob {
		ev |= hubstore.EventJobs
	}
	if ev != 0 {
		s.db.notify(ev)
	}
	return cur, err
}

func (s *Store) Unsubscribe(ctx context.Context, jobID uint64, key string) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	delete(s.db.jobs, jobID)
	s.db.leases.DropJob(jobID)
	delete(s.db.subs, key)
	s.db.leases.Drop(key)
	s.unlock()
	s.db.notify(hubstore.EventSubscriptions | hubstore.EventJobs)
	return nil
}

func apply(r *hubstore.Subscription, u hubstore.CursorUpdate) {
	r.Cursor = max(r.Cursor, u.Cursor)
	r.Attempt, r.FirstFail, r.LastError, r.NextAt = u.Attempt, shared.Time(u.FirstFail), u.LastError, shared.Time(u.NextAt)
}

func (s *Store) UpdateCursors(ctx context.Context, node string, us []hubstore.CursorUpdate) ([]string, error) {
	if node == "" {
		return nil, invalid("empty node name")
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.unlock()
	var refused []string
	for _, u := range us {
		r, ok := s.db.subs[u.Key]
		if !ok || !s.db.leases.Holds(node, u.Key) {
			refused = append(refused, u.Key)
			continue
		}
		apply(&r, u)
		s.db.subs[u.Key] = r
	}
	return refused, nil
}

func (s *Store) AddDeadLetter(ctx context.Context, node string, d hubstore.DeadLetter, u hubstore.CursorUpdate) (hubstore.DeadLetter, error) {
	if node == "" {
		return d, invalid("empty node name")
	}
	if err := s.lock(ctx); err != nil {
		return d, err
	}
	defer s.unlock()
	r, ok := s.db.subs[u.Key]
	if !ok || !s.db.leases.Holds(node, u.Key) {
		return d, fmt.Errorf("memstore: subscription %q: %w", u.Key, hubstore.ErrNotHolder)
	}
	apply(&r, u)
	s.db.subs[u.Key] = r
	s.db.nextDead++
	d = cloneDead(d)
	d.ID = s.db.nextDead
	s.db.dead[d.ID] = d
	return cloneDead(d), nil
}

func (s *Store) DeadLetters(ctx context.Context) iter.Seq2[hubstore.DeadLetter, error] {
	return func(yield func(hubstore.DeadLetter, error) bool) {
		var after uint64
		for {
			if err := s.lock(ctx); err != nil {
				yield(hubstore.DeadLetter{}, err)
				return
			}
			var ids []uint64
			for id := range s.db.dead {
				if id > after {
					ids = append(ids, id)
				}
			}
			slices.Sort(ids)
			ids = ids[:min(len(ids), page)]
			ds := make([]hubstore.DeadLetter, len(ids))
			for i, id := range ids {
				ds[i] = cloneDead(s.db.dead[id])
			}
			s.unlock()
			for _, d := range ds {
				if !yield(d, nil) {
					return
				}
			}
			if len(ds) < page {
				return
			}
			after = ds[len(ds)-1].ID
		}
	}
}

func (s *Store) GetDeadLetter(ctx context.Context, id uint64) (hubstore.DeadLetter, error) {
	if err := s.lock(ctx); err != nil {
		return hubstore.DeadLetter{}, err
	}
	defer s.unlock()
	d, ok := s.db.dead[id]
	if !ok {
		return d, fmt.Errorf("memstore: dead letter %d: %w", id, hubstore.ErrNotFound)
	}
	return cloneDead(d), nil
}

func (s *Store) DeleteDeadLetter(ctx context.Context, id uint64) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	if _, ok := s.db.dead[id]; !ok {
		return fmt.Errorf("memstore: dead letter %d: %w", id, hubstore.ErrNotFound)
	}
	delete(s.db.dead, id)
	return nil
}

func (s *Store) AddJob(ctx context.Context, j hubstore.Job, maxTotal, maxPerHost int) (hubstore.Job, error) {
	if j.Key == "" {
		return j, invalid("job without key")
	}
	if err := s.lock(ctx); err != nil {
		return j, err
	}
	if maxTotal > 0 && len(s.db.jobs) >= maxTotal {
		s.unlock()
		return j, fmt.Errorf("memstore: %w", hubstore.ErrTooManyJobs)
	}
	if maxPerHost > 0 {
		n := 0
		for _, o := range s.db.jobs {
			if o.Host == j.Host {
				n++
			}
		}
		if n >= maxPerHost {
			s.unlock()
			return j, fmt.Errorf("memstore: %w", hubstore.ErrTooManyJobs)
		}
	}
	s.db.nextJob++
	j = normJob(j)
	j.ID = s.db.nextJob
	s.db.jobs[j.ID] = j
	s.unlock()
	s.db.notify(hubstore.EventJobs)
	return j, nil
}

func (s *Store) UpdateJob(ctx context.Context, j hubstore.Job) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	if _, ok := s.db.jobs[j.ID]; !ok {
		s.unlock()
		return fmt.Errorf("memstore: job %d: %w", j.ID, hubstore.ErrNotFound)
	}
	s.db.jobs[j.ID] = normJob(j)
	s.db.leases.DropJob(j.ID)
	s.unlock()
	s.db.notify(hubstore.EventJobs)
	return nil
}

func (s *Store) DeleteJob(ctx context.Context, id uint64) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	delete(s.db.jobs, id)
	s.db.leases.DropJob(id)
	s.unlock()
	return nil
}

// sortedJobs returns the jobs in ID order. The lock must be held.
func (db *DB) sortedJobs() []hubstore.Job {
	out := make([]hubstore.Job, 0, len(db.jobs))
	for _, j := range db.jobs {
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b hubstore.Job) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func (s *Store) Jobs(ctx context.Context) iter.Seq2[hubstore.Job, error] {
	return func(yield func(hubstore.Job, error) bool) {
		if err := s.lock(ctx); err != nil {
			yield(hubstore.Job{}, err)
			return
		}
		js := s.db.sortedJobs()
		s.unlock()
		for _, j := range js {
			if !yield(j, nil) {
				return
			}
		}
	}
}

func (s *Store) ClaimJobs(ctx context.Context, node string, now time.Time, ttl time.Duration, max int) ([]hubstore.Job, time.Time, error) {
	if node == "" || max < 1 {
		return nil, time.Time{}, invalid("ClaimJobs(%q, max %d)", node, max)
	}
	if err := s.lock(ctx); err != nil {
		return nil, time.Time{}, err
	}
	defer s.unlock()
	return shared.ClaimJobs(s.db.leases, s.db.sortedJobs(), node, now, ttl, max)
}

func (s *Store) Claim(ctx context.Context, node string, ttl time.Duration, max int) (hubstore.Claims, error) {
	if node == "" || max < 0 || ttl <= 0 {
		return hubstore.Claims{}, invalid("Claim(%q, ttl %v, max %d)", node, ttl, max)
	}
	if err := s.lock(ctx); err != nil {
		return hubstore.Claims{}, err
	}
	defer s.unlock()
	held, nodes := s.db.leases.Claim(node, ttl, max, s.db.sortedKeys("", ""))
	c := hubstore.Claims{Nodes: nodes, Subscriptions: len(s.db.subs), Held: make([]hubstore.Subscription, len(held))}
	for i, k := range held {
		c.Held[i] = s.db.subs[k]
	}
	return c, nil
}

func (s *Store) Release(ctx context.Context, node string, keys ...string) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	s.db.leases.Release(node, keys)
	s.unlock()
	ev := hubstore.EventSubscriptions
	if len(keys) == 0 {
		ev |= hubstore.EventJobs
	}
	s.db.notify(ev)
	return nil
}

func (s *Store) Watch(ctx context.Context) (<-chan hubstore.Event, error) {
	if s.closed.Load() {
		return nil, hubstore.ErrClosed
	}
	return s.w.Add(ctx)
}

// Close closes the handle and its Watch channels; its claims stay until
// they expire.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.db.mu.Lock()
	delete(s.db.handles, s)
	s.db.mu.Unlock()
	s.w.Close()
	return nil
}
