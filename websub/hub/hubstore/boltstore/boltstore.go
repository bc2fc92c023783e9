package boltstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/resourcesync-go/resourcesync/internal/boltdb"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/internal/shared"
)

var (
	bLog   = []byte("log")
	bSubs  = []byte("subs")
	bVerif = []byte("verif")
	bDead  = []byte("dead")
)

const (
	page       = 256   // records per read transaction when iterating
	maxEntries = 1000  // cap on one Entries page
	prunePage  = 10000 // deletions per Prune call
)

// Options tune Open. The zero value is the default.
type Options struct {
	// NoSync skips fsync on commit (benchmarks and tests only).
	NoSync bool
	// Now is the clock of claim leases (default time.Now).
	Now func() time.Time
}

// Store is a hubstore.Store on one bbolt file.
type Store struct {
	db     *bbolt.DB
	unmark func() // removes the holder record (boltdb.MarkHolder)
	w      shared.Watchers
	closed atomic.Bool

	// Lock order: mu, wmu, bbolt's writer lock, cmu.
	mu     sync.Mutex // leases; held over a write when a claim is checked
	leases *shared.Leases
	// wmu serialises write transactions together with their commit
	// handlers, which update the memory below: a write sees every
	// earlier one there.
	wmu sync.Mutex

	cmu      sync.Mutex           // the memory below: written in commit handlers only
	subs     map[string]subRecord // mirror of the subs bucket (the hub kept it in memory too)
	perTopic map[string]int
	jobs     map[uint64]hubstore.Job // mirror of the verif bucket (bounded by the pending limit)
	perHost  map[string]int
}

var _ hubstore.Store = (*Store)(nil)

// Open opens (or creates) the state file at path.
func Open(path string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	db, err := boltdb.Open(path, &bbolt.Options{Timeout: 2 * time.Second, FreelistType: bbolt.FreelistMapType})
	if errors.Is(err, boltdb.ErrLocked) {
		if h := boltdb.Holder(path); h != "" {
			return nil, fmt.Errorf("boltstore: %s is held open by %s (stop it, or give this hub another --state): %w", path, h, hubstore.ErrLocked)
		}
		return nil, fmt.Errorf("boltstore: %s is held open by another process: %w", path, hubstore.ErrLocked)
	}
	if err != nil {
		if errors.Is(err, boltdb.ErrCorrupt) {
			return nil, fmt.Errorf("boltstore: open %s: %w: %w", path, hubstore.ErrCorrupt, err)
		}
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	db.NoSync = opts.NoSync
	s := &Store{db: db, leases: shared.NewLeases(opts.Now), subs: map[string]subRecord{}, jobs: map[uint64]hubstore.Job{}, perTopic: map[string]int{}, perHost: map[string]int{}}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bLog, bSubs, bVerif, bDead} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		err := tx.Bucket(bSubs).ForEach(func(k, v []byte) error {
			var r subRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("subscription %q: %w: %v", k, hubstore.ErrCorrupt, err)
			}
			s.perTopic[r.Topic]++
			s.subs[string(k)] = r
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bVerif).ForEach(func(k, v []byte) error {
			var r jobRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("verification job %x: %w: %v", k, hubstore.ErrCorrupt, err)
			}
			if len(k) != 8 {
				return fmt.Errorf("verification job key %x: %w", k, hubstore.ErrCorrupt)
			}
			j := r.job()
			j.ID = binary.BigEndian.Uint64(k)
			s.jobs[j.ID] = j
			s.perHost[j.Host]++
			return nil
		})
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: init %s: %w", path, err)
	}
	s.unmark = boltdb.MarkHolder(path) // so that "locked" can say by whom
	return s, nil
}

func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return hubstore.ErrClosed
	}
	return ctx.Err()
}

func (s *Store) view(ctx context.Context, fn func(tx *bbolt.Tx) error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return s.mapErr(s.db.View(fn))
}

func (s *Store) update(ctx context.Context, fn func(tx *bbolt.Tx) error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.mapErr(s.db.Update(fn))
}

func (s *Store) mapErr(err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("boltstore: %w", hubstore.ErrClosed)
	}
	if err != nil {
		return fmt.Errorf("boltstore: %w", err)
	}
	return nil
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("boltstore: %w: "+format, append([]any{hubstore.ErrInvalid}, a...)...)
}

func (s *Store) Append(ctx context.Context, topic string, e hubstore.Entry) (uint64, error) {
	if topic == "" {
		return 0, invalid("empty topic")
	}
	var seq uint64
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		b, err := tx.Bucket(bLog).CreateBucketIfNotExists([]byte(topic))
		if err != nil {
			return err
		}
		if seq, err = b.NextSequence(); err != nil {
			return err
		}
		return b.Put(u64(seq), encodeEntry(&e))
	})
	if err != nil {
		return 0, err
	}
	s.w.Notify(hubstore.EventEntries)
	return seq, nil
}

func (s *Store) Head(ctx context.Context, topic string) (uint64, error) {
	var h uint64
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		h = head(tx, topic)
		return nil
	})
	return h, err
}

func head(tx *bbolt.Tx, topic string) uint64 {
	if b := tx.Bucket(bLog).Bucket([]byte(topic)); b != nil {
		return b.Sequence()
	}
	return 0
}

func (s *Store) Heads(ctx context.Context) (map[string]uint64, error) {
	out := map[string]uint64{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		lb := tx.Bucket(bLog)
		return lb.ForEachBucket(func(k []byte) error {
			out[string(k)] = lb.Bucket(k).Sequence()
			return nil
		})
	})
	return out, err
}

func (s *Store) Entries(ctx context.Context, topic string, after uint64, max int) ([]hubstore.Entry, error) {
	if max < 1 {
		return nil, invalid("max %d < 1", max)
	}
	max = min(max, maxEntries)
	var out []hubstore.Entry
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bLog).Bucket([]byte(topic))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(u64(after + 1)); k != nil && len(out) < max; k, v = c.Next() {
			if len(k) != 8 {
				return errBadEntry
			}
			e, err := decodeEntry(binary.BigEndian.Uint64(k), v)
			if err != nil {
				return fmt.Errorf("topic %q seq %d: %w", topic, binary.BigEndian.Uint64(k), err)
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

func (s *Store) Prune(ctx context.Context, topic string, below uint64) (int, error) {
	n := 0
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		n = 0
		b := tx.Bucket(bLog).Bucket([]byte(topic))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		lim := u64(below)
		for k, _ := c.First(); k != nil && bytes.Compare(k, lim) < 0 && n < prunePage; k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// getSub returns the subscription key from memory (current for a
// write transaction, which holds wmu, and for readers).
func (s *Store) getSub(key string) *subRecord {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if r, ok := s.subs[key]; ok {
		return &r
	}
	return nil
}

// putSub writes r within tx and into memory when tx commits.
func (s *Store) putSub(tx *bbolt.Tx, key string, r *subRecord) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := tx.Bucket(bSubs).Put([]byte(key), v); err != nil {
		return err
	}
	rec := *r
	tx.OnCommit(func() {
		s.cmu.Lock()
		defer s.cmu.Unlock()
		if old, ok := s.subs[key]; ok {
			s.countLocked(old.Topic, -1)
		}
		s.countLocked(rec.Topic, 1)
		s.subs[key] = rec
	})
	return nil
}

func (s *Store) countLocked(topic string, d int) {
	if s.perTopic[topic] += d; s.perTopic[topic] <= 0 {
		delete(s.perTopic, topic)
	}
}

func (s *Store) PutSubscription(ctx context.Context, r hubstore.Subscription) error {
	if r.Key == "" || r.Topic == "" {
		return invalid("subscription without key or topic")
	}
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		rec := toRecord(&r)
		return s.putSub(tx, r.Key, &rec)
	})
	if err == nil {
		s.w.Notify(hubstore.EventSubscriptions)
	}
	return err
}

func (s *Store) GetSubscription(ctx context.Context, key string) (hubstore.Subscription, error) {
	if err := s.check(ctx); err != nil {
		return hubstore.Subscription{}, err
	}
	r := s.getSub(key)
	if r == nil {
		return hubstore.Subscription{}, fmt.Errorf("boltstore: subscription %q: %w", key, hubstore.ErrNotFound)
	}
	return r.sub(key), nil
}

// deleteSub deletes key within tx; it reports whether it existed.
func (s *Store) deleteSub(tx *bbolt.Tx, key string) (bool, error) {
	if s.getSub(key) == nil {
		return false, nil
	}
	tx.OnCommit(func() {
		s.cmu.Lock()
		defer s.cmu.Unlock()
		if old, ok := s.subs[key]; ok {
			s.countLocked(old.Topic, -1)
			delete(s.subs, key)
		}
	})
	return true, tx.Bucket(bSubs).Delete([]byte(key))
}

func (s *Store) DeleteSubscription(ctx context.Context, key string) error {
	var existed bool
	err := s.update(ctx, func(tx *bbolt.Tx) (err error) {
		existed, err = s.deleteSub(tx, key)
		return err
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.leases.Drop(key)
	s.mu.Unlock()
	if existed {
		s.w.Notify(hubstore.EventSubscriptions)
	}
	return nil
}

func (s *Store) Subscriptions(ctx context.Context, topic string) iter.Seq2[hubstore.Subscription, error] {
	return func(yield func(hubstore.Subscription, error) bool) {
		var after []byte
		for {
			var recs []hubstore.Subscription
			var last []byte
			err := s.view(ctx, func(tx *bbolt.Tx) error {
				c := tx.Bucket(bSubs).Cursor()
				k, v := c.First()
				if after != nil {
					if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
						k, v = c.Next()
					}
				}
				n := 0
				for ; k != nil && n < page; k, v = c.Next() {
					n++
					last = bytes.Clone(k)
					var r subRecord
					if err := json.Unmarshal(v, &r); err != nil {
						return fmt.Errorf("subscription %q: %w: %v", k, hubstore.ErrCorrupt, err)
					}
					if topic == "" || r.Topic == topic {
						recs = append(recs, r.sub(string(k)))
					}
				}
				return nil
			})
			if err != nil {
				yield(hubstore.Subscription{}, err)
				return
			}
			for _, r := range recs {
				if !yield(r, nil) {
					return
				}
			}
			if last == nil || bytes.Equal(last, after) {
				return
			}
			after = last
		}
	}
}

func (s *Store) CountSubscriptions(ctx context.Context, topic string) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	s.cmu.Lock()
	defer s.cmu.Unlock()
	return s.perTopic[topic], nil
}

func (s *Store) Counts(ctx context.Context) (hubstore.Counts, error) {
	var c hubstore.Counts
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		c.DeadLetters = tx.Bucket(bDead).Stats().KeyN
		s.cmu.Lock()
		c.Subscriptions, c.Jobs = len(s.subs), len(s.jobs)
		s.cmu.Unlock()
		return nil
	})
	return c, err
}

// deleteJob deletes job id within tx; it reports whether it existed.
func (s *Store) deleteJob(tx *bbolt.Tx, id uint64) (bool, error) {
	s.cmu.Lock()
	j, ok := s.jobs[id]
	s.cmu.Unlock()
	if !ok {
		return false, nil
	}
	tx.OnCommit(func() {
		s.cmu.Lock()
		delete(s.jobs, id)
		if s.perHost[j.Host]--; s.perHost[j.Host] <= 0 {
			delete(s.perHost, j.Host)
		}
		s.cmu.Unlock()
	})
	return true, tx.Bucket(bVerif).Delete(u64(id))
}

func (s *Store) Subscribe(ctx context.Context, jobID uint64, r hubstore.Subscription, maxPerTopic int) (hubstore.Subscription, error) {
	if r.Key == "" || r.Topic == "" {
		return r, invalid("subscription without key or topic")
	}
	var out hubstore.Subscription
	var full, hadJob bool
	err := s.update(ctx, func(tx *bbolt.Tx) (err error) {
		full = false
		if hadJob, err = s.deleteJob(tx, jobID); err != nil {
			return err
		}
		cur := s.getSub(r.Key)
		if cur == nil {
			s.cmu.Lock()
			n := s.perTopic[r.Topic]
			s.cmu.Unlock()
			if maxPerTopic > 0 && n >= maxPerTopic {
				full = true
				return nil
			}
			cur = &subRecord{Cursor: head(tx, r.Topic)}
		}
		cur.Topic, cur.Callback, cur.Secret, cur.Lease, cur.Expires = r.Topic, r.Callback, r.Secret, r.Lease, shared.Time(r.Expires)
		out = cur.sub(r.Key)
		return s.putSub(tx, r.Key, cur)
	})
	if err != nil {
		return r, err
	}
	if hadJob {
		s.mu.Lock()
		s.leases.DropJob(jobID)
		s.mu.Unlock()
	}
	if full {
		if hadJob {
			s.w.Notify(hubstore.EventJobs)
		}
		return r, fmt.Errorf("boltstore: %w", hubstore.ErrTopicFull)
	}
	s.w.Notify(hubstore.EventSubscriptions | hubstore.EventJobs)
	return out, nil
}

func (s *Store) Unsubscribe(ctx context.Context, jobID uint64, key string) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		if _, err := s.deleteJob(tx, jobID); err != nil {
			return err
		}
		_, err := s.deleteSub(tx, key)
		return err
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.leases.DropJob(jobID)
	s.leases.Drop(key)
	s.mu.Unlock()
	s.w.Notify(hubstore.EventSubscriptions | hubstore.EventJobs)
	return nil
}

func applyUpdate(r *subRecord, u *hubstore.CursorUpdate) {
	r.Cursor = max(r.Cursor, u.Cursor)
	r.Attempt, r.FirstFail, r.LastError, r.NextAt = u.Attempt, shared.Time(u.FirstFail), u.LastError, shared.Time(u.NextAt)
}

func (s *Store) UpdateCursors(ctx context.Context, node string, us []hubstore.CursorUpdate) ([]string, error) {
	if node == "" {
		return nil, invalid("empty node name")
	}
	if len(us) == 0 {
		return nil, s.check(ctx)
	}
	// s.mu is held over the transaction so that no claim changes hands
	// between the check and the commit.
	s.mu.Lock()
	defer s.mu.Unlock()
	var refused []string
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		refused = refused[:0]
		for i := range us {
			u := &us[i]
			if !s.leases.Holds(node, u.Key) {
				refused = append(refused, u.Key)
				continue
			}
			r := s.getSub(u.Key)
			if r == nil {
				refused = append(refused, u.Key)
				continue
			}
			applyUpdate(r, u)
			if err := s.putSub(tx, u.Key, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return refused, nil
}

func (s *Store) AddDeadLetter(ctx context.Context, node string, d hubstore.DeadLetter, u hubstore.CursorUpdate) (hubstore.DeadLetter, error) {
	if node == "" {
		return d, invalid("empty node name")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d = normDead(d)
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		r := s.getSub(u.Key)
		if r == nil || !s.leases.Holds(node, u.Key) {
			return fmt.Errorf("subscription %q: %w", u.Key, hubstore.ErrNotHolder)
		}
		applyUpdate(r, &u)
		if err := s.putSub(tx, u.Key, r); err != nil {
			return err
		}
		var err error
		b := tx.Bucket(bDead)
		if d.ID, err = b.NextSequence(); err != nil {
			return err
		}
		v, err := json.Marshal(&d)
		if err != nil {
			return err
		}
		return b.Put(u64(d.ID), v)
	})
	return d, err
}

func (s *Store) DeadLetters(ctx context.Context) iter.Seq2[hubstore.DeadLetter, error] {
	return func(yield func(hubstore.DeadLetter, error) bool) {
		var after uint64
		for {
			var ds []hubstore.DeadLetter
			err := s.view(ctx, func(tx *bbolt.Tx) error {
				c := tx.Bucket(bDead).Cursor()
				for k, v := c.Seek(u64(after + 1)); k != nil && len(ds) < page; k, v = c.Next() {
					var d hubstore.DeadLetter
					if err := json.Unmarshal(v, &d); err != nil {
						return fmt.Errorf("dead letter %x: %w: %v", k, hubstore.ErrCorrupt, err)
					}
					ds = append(ds, normDead(d))
				}
				return nil
			})
			if err != nil {
				yield(hubstore.DeadLetter{}, err)
				return
			}
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
	var d hubstore.DeadLetter
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		v := tx.Bucket(bDead).Get(u64(id))
		if v == nil {
			return fmt.Errorf("dead letter %d: %w", id, hubstore.ErrNotFound)
		}
		if err := json.Unmarshal(v, &d); err != nil {
			return fmt.Errorf("dead letter %d: %w: %v", id, hubstore.ErrCorrupt, err)
		}
		return nil
	})
	return normDead(d), err
}

func (s *Store) DeleteDeadLetter(ctx context.Context, id uint64) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bDead)
		if b.Get(u64(id)) == nil {
			return fmt.Errorf("dead letter %d: %w", id, hubstore.ErrNotFound)
		}
		return b.Delete(u64(id))
	})
}

func putJob(tx *bbolt.Tx, j *hubstore.Job) error {
	v, err := json.Marshal(toJobRecord(j))
	if err != nil {
		return err
	}
	return tx.Bucket(bVerif).Put(u64(j.ID), v)
}

func (s *Store) AddJob(ctx context.Context, j hubstore.Job, maxTotal, maxPerHost int) (hubstore.Job, error) {
	if j.Key == "" {
		return j, invalid("job without key")
	}
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		s.cmu.Lock()
		full := maxTotal > 0 && len(s.jobs) >= maxTotal || maxPerHost > 0 && s.perHost[j.Host] >= maxPerHost
		s.cmu.Unlock()
		if full {
			return hubstore.ErrTooManyJobs
		}
		id, err := tx.Bucket(bVerif).NextSequence()
		if err != nil {
			return err
		}
		j.ID = id
		j.NextAt = shared.Time(j.NextAt)
		stored := j
		tx.OnCommit(func() {
			s.cmu.Lock()
			s.jobs[stored.ID] = stored
			s.perHost[stored.Host]++
			s.cmu.Unlock()
		})
		return putJob(tx, &j)
	})
	if err != nil {
		return j, err
	}
	s.w.Notify(hubstore.EventJobs)
	return j, nil
}

func (s *Store) UpdateJob(ctx context.Context, j hubstore.Job) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		s.cmu.Lock()
		old, ok := s.jobs[j.ID]
		s.cmu.Unlock()
		if !ok {
			return fmt.Errorf("job %d: %w", j.ID, hubstore.ErrNotFound)
		}
		j.Host = old.Host // the count is by the stored host
		j.NextAt = shared.Time(j.NextAt)
		stored := j
		tx.OnCommit(func() {
			s.cmu.Lock()
			s.jobs[stored.ID] = stored
			s.cmu.Unlock()
		})
		return putJob(tx, &j)
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.leases.DropJob(j.ID)
	s.mu.Unlock()
	s.w.Notify(hubstore.EventJobs)
	return nil
}

func (s *Store) DeleteJob(ctx context.Context, id uint64) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		_, err := s.deleteJob(tx, id)
		return err
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.leases.DropJob(id)
	s.mu.Unlock()
	return nil
}

// allJobs returns every job in ID order (bounded by the pending limit).
func (s *Store) allJobs(ctx context.Context) ([]hubstore.Job, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	s.cmu.Lock()
	out := make([]hubstore.Job, 0, len(s.jobs))
	for _, j := range s.jobs {
		out = append(out, j)
	}
	s.cmu.Unlock()
	slices.SortFunc(out, func(a, b hubstore.Job) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

func (s *Store) Jobs(ctx context.Context) iter.Seq2[hubstore.Job, error] {
	return func(yield func(hubstore.Job, error) bool) {
		js, err := s.allJobs(ctx)
		if err != nil {
			yield(hubstore.Job{}, err)
			return
		}
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
	js, err := s.allJobs(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return shared.ClaimJobs(s.leases, js, node, now, ttl, max)
}

func (s *Store) Claim(ctx context.Context, node string, ttl time.Duration, max int) (hubstore.Claims, error) {
	if node == "" || max < 0 || ttl <= 0 {
		return hubstore.Claims{}, invalid("Claim(%q, ttl %v, max %d)", node, ttl, max)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return hubstore.Claims{}, err
	}
	// Only the keys nobody holds live are candidates: with every
	// subscription claimed (the steady state) none is sorted, which at
	// 10,000 subscriptions was most of a renewal round's cost.
	var keys []string
	s.cmu.Lock()
	total := len(s.subs)
	if max > 0 {
		now := s.leases.Now()
		for k := range s.subs {
			if !s.leases.Live(k, now) {
				keys = append(keys, k)
			}
		}
	}
	s.cmu.Unlock()
	slices.Sort(keys)
	var c hubstore.Claims
	c.Subscriptions = total
	var held []string
	held, c.Nodes = s.leases.Claim(node, ttl, max, keys)
	c.Held = make([]hubstore.Subscription, 0, len(held))
	for _, k := range held {
		r := s.getSub(k)
		if r == nil { // deleted meanwhile: forget the claim
			s.leases.Drop(k)
			continue
		}
		c.Held = append(c.Held, r.sub(k))
	}
	return c, nil
}

func (s *Store) Release(ctx context.Context, node string, keys ...string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.leases.Release(node, keys)
	s.mu.Unlock()
	ev := hubstore.EventSubscriptions
	if len(keys) == 0 {
		ev |= hubstore.EventJobs
	}
	s.w.Notify(ev)
	return nil
}

func (s *Store) Watch(ctx context.Context) (<-chan hubstore.Event, error) {
	if s.closed.Load() {
		return nil, hubstore.ErrClosed
	}
	return s.w.Add(ctx)
}

// Close closes the file and the Watch channels.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.w.Close()
	if s.unmark != nil {
		s.unmark()
	}
	return s.db.Close()
}
