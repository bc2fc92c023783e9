package boltstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/internal/boltdb"
)

// Errors of Open and of reading a damaged file; match them with
// errors.Is.
var (
	// ErrLocked: another process holds the file open.
	ErrLocked = errors.New("boltstore: the state file is held open by another process")
	// ErrCorrupt: the file or a value in it is damaged.
	ErrCorrupt = errors.New("boltstore: the state file is damaged")
)

var (
	bRuns      = []byte("runs")
	bBySource  = []byte("bysource")
	bRunning   = []byte("running")
	bSchedules = []byte("schedules")
	bLeases    = []byte("leases")
	bNodes     = []byte("nodes")
)

// Options tune Open. The zero value is the default.
type Options struct {
	// NoSync skips fsync on commit (benchmarks and tests only).
	NoSync bool
	// Now is the clock of leases, heartbeats and the End of interrupted
	// runs (default time.Now).
	Now func() time.Time
	// LockTimeout bounds the wait for another process to close the file
	// (default 2 s).
	LockTimeout time.Duration
}

// Store is an aggstore.Store on one bbolt file.
type Store struct {
	db     *bbolt.DB
	unmark func() // removes the holder record (boltdb.MarkHolder)
	now    func() time.Time
	// instance tells this handle's heartbeats from an earlier one's (a
	// process that was killed and restarted with the same node name).
	instance []byte
	closed   atomic.Bool
}

var _ aggstore.Store = (*Store)(nil)

// Open opens (or creates, mode 0600) the state file at path; its
// directory must exist.
func Open(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = 2 * time.Second
	}
	db, err := boltdb.Open(path, &bbolt.Options{Timeout: o.LockTimeout, FreelistType: bbolt.FreelistMapType})
	switch {
	case errors.Is(err, boltdb.ErrLocked):
		if h := boltdb.Holder(path); h != "" {
			return nil, fmt.Errorf("boltstore: %s is held open by %s (stop it, or give this aggregator another --store): %w", path, h, ErrLocked)
		}
		return nil, fmt.Errorf("boltstore: %s: %w", path, ErrLocked)
	case errors.Is(err, boltdb.ErrCorrupt):
		return nil, fmt.Errorf("boltstore: open %s: %w: %v", path, ErrCorrupt, err)
	case err != nil:
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	db.NoSync = o.NoSync
	// One process holds the file (its lock): a heartbeat of another
	// handle is a dead process's, taken over at once (Heartbeat).
	err = boltdb.Run(db, true, func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bRuns, bBySource, bRunning, bSchedules, bLeases, bNodes} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		if errors.Is(err, berrors.ErrIncompatibleValue) {
			err = fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		return nil, fmt.Errorf("boltstore: init %s: %w", path, mapErr(err))
	}
	// The holder record, so that "locked" can say by whom.
	return &Store{db: db, now: o.Now, instance: []byte(rand.Text()), unmark: boltdb.MarkHolder(path)}, nil
}

// Close closes the file; leases stay until they expire.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.unmark != nil {
		s.unmark()
	}
	return s.db.Close()
}

func (s *Store) do(ctx context.Context, write bool, fn func(tx *bbolt.Tx) error) error {
	if s.closed.Load() {
		return fmt.Errorf("boltstore: %w", aggstore.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := boltdb.Run(s.db, write, fn)
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("boltstore: %w", aggstore.ErrClosed)
	}
	return mapErr(err)
}

// mapErr wraps bbolt's and the file's errors; the contract's pass as
// they are.
func mapErr(err error) error {
	switch {
	case err == nil, errors.Is(err, aggstore.ErrNotHolder), errors.Is(err, aggstore.ErrNotRunning), errors.Is(err, aggstore.ErrInvalid),
		errors.Is(err, aggstore.ErrFenced), errors.Is(err, aggstore.ErrNodeInUse):
		return err
	case errors.Is(err, boltdb.ErrCorrupt) && !errors.Is(err, ErrCorrupt):
		return fmt.Errorf("boltstore: %w: %v", ErrCorrupt, err)
	}
	return fmt.Errorf("boltstore: %w", err)
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("boltstore: %w: "+format, append([]any{aggstore.ErrInvalid}, a...)...)
}

func corrupt(what string, k []byte, err error) error {
	return fmt.Errorf("%s %q: %w: %v", what, k, ErrCorrupt, err)
}

func u64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// Heartbeat implements aggstore.Store. A node's value is its expiry
// (Unix nanoseconds, 8 bytes) and the handle's instance. Only one handle
// has the file open, so another instance's heartbeat is never refused:
// it is a dead process's, whose lease tenures end here.
func (s *Store) Heartbeat(ctx context.Context, node string, ttl time.Duration) ([]string, error) {
	if node == "" || ttl <= 0 {
		return nil, invalid("heartbeat of node %q for %v", node, ttl)
	}
	var alive []string
	err := s.do(ctx, true, func(tx *bbolt.Tx) error {
		now := s.now()
		b := tx.Bucket(bNodes)
		if old := b.Get([]byte(node)); old != nil && (len(old) < 8 || !bytes.Equal(old[8:], s.instance)) {
			if err := s.endTenures(tx, node, now); err != nil {
				return err
			}
		}
		if err := b.Put([]byte(node), append(u64(uint64(now.Add(ttl).UnixNano())), s.instance...)); err != nil {
			return err
		}
		var dead [][]byte
		err := b.ForEach(func(k, v []byte) error {
			if len(v) != 8 && len(v) != 8+len(s.instance) {
				return corrupt("node", k, fmt.Errorf("%d bytes", len(v)))
			}
			if int64(binary.BigEndian.Uint64(v)) > now.UnixNano() {
				alive = append(alive, string(k))
			} else {
				dead = append(dead, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range dead { // an expired node is gone: forget it
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return alive, nil // bbolt iterates in key order
}

// endTenures expires node's live leases (another handle of that name
// held them): whoever claims them next starts a new epoch.
func (s *Store) endTenures(tx *bbolt.Tx, node string, now time.Time) error {
	b := tx.Bucket(bLeases)
	var mine []leaseRec
	var keys [][]byte
	err := b.ForEach(func(k, v []byte) error {
		var l leaseRec
		if err := json.Unmarshal(v, &l); err != nil {
			return corrupt("lease", k, err)
		}
		if l.Node == node && live(l, now) {
			l.Expires = now.UnixNano()
			mine, keys = append(mine, l), append(keys, slices.Clone(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, l := range mine {
		v, err := json.Marshal(l)
		if err != nil {
			return err
		}
		if err := b.Put(keys[i], v); err != nil {
			return err
		}
	}
	return nil
}

type leaseRec struct {
	Node    string `json:"node"`
	Expires int64  `json:"expires"` // Unix nanoseconds
	Epoch   int64  `json:"epoch,omitempty"`
	// Instance is the handle that took the lease: only it renews it.
	Instance string `json:"instance,omitempty"`
}

func getLease(tx *bbolt.Tx, source string) (leaseRec, bool, error) {
	v := tx.Bucket(bLeases).Get([]byte(source))
	if v == nil {
		return leaseRec{}, false, nil
	}
	var l leaseRec
	if err := json.Unmarshal(v, &l); err != nil {
		return leaseRec{}, false, corrupt("lease", []byte(source), err)
	}
	return l, true, nil
}

func live(l leaseRec, now time.Time) bool { return l.Expires > now.UnixNano() }

// Claim implements aggstore.Store. Epochs come from the leases
// bucket's sequence: increasing over every Source, so per Source too,
// even after Forget.
func (s *Store) Claim(ctx context.Context, node, source string, ttl time.Duration) (bool, error) {
	if node == "" || source == "" || ttl <= 0 {
		return false, invalid("claim of %q by node %q for %v", source, node, ttl)
	}
	held := false
	err := s.do(ctx, true, func(tx *bbolt.Tx) error {
		now := s.now()
		l, found, err := getLease(tx, source)
		if err != nil {
			return err
		}
		mine := found && l.Node == node && l.Instance == string(s.instance)
		if found && !mine && live(l, now) {
			return nil
		}
		renewal := mine && live(l, now)
		n := leaseRec{Node: node, Expires: now.Add(ttl).UnixNano(), Epoch: l.Epoch, Instance: string(s.instance)}
		if !renewal {
			seq, err := tx.Bucket(bLeases).NextSequence()
			if err != nil {
				return err
			}
			n.Epoch = int64(seq)
		}
		v, err := json.Marshal(n)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bLeases).Put([]byte(source), v); err != nil {
			return err
		}
		held = true
		if renewal {
			return nil // the older epochs' runs ended when this one began
		}
		// A new tenure: the runs of the earlier ones are over, whoever
		// ran them (a node whose lease expired, or was released).
		_, err = s.interrupt(tx, now, func(r *aggstore.Run) bool { return r.Source == source && r.Epoch != n.Epoch })
		return err
	})
	return held, err
}

// interrupt marks the running runs that match interrupted, ending at
// end, and returns how many.
func (s *Store) interrupt(tx *bbolt.Tx, end time.Time, match func(*aggstore.Run) bool) (int, error) {
	var ids [][]byte
	err := tx.Bucket(bRunning).ForEach(func(k, _ []byte) error {
		ids = append(ids, k)
		return nil
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range ids {
		r, err := getRun(tx, k)
		if err != nil {
			return 0, err
		}
		if !match(&r) {
			continue
		}
		r.State, r.End = aggstore.StateInterrupted, end.UTC()
		if err := putRun(tx, &r); err != nil {
			return 0, err
		}
		if err := tx.Bucket(bRunning).Delete(k); err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// Release implements aggstore.Store.
func (s *Store) Release(ctx context.Context, node string, sources ...string) error {
	return s.do(ctx, true, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bLeases)
		var drop [][]byte
		err := b.ForEach(func(k, v []byte) error {
			if len(sources) > 0 && !slices.Contains(sources, string(k)) {
				return nil
			}
			var l leaseRec
			if err := json.Unmarshal(v, &l); err != nil {
				return corrupt("lease", k, err)
			}
			if l.Node == node {
				drop = append(drop, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range drop {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// Leases implements aggstore.Store.
func (s *Store) Leases(ctx context.Context) ([]aggstore.Lease, error) {
	var out []aggstore.Lease
	err := s.do(ctx, false, func(tx *bbolt.Tx) error {
		now := s.now()
		return tx.Bucket(bLeases).ForEach(func(k, v []byte) error {
			var l leaseRec
			if err := json.Unmarshal(v, &l); err != nil {
				return corrupt("lease", k, err)
			}
			if live(l, now) {
				out = append(out, aggstore.Lease{Source: string(k), Node: l.Node, Expires: time.Unix(0, l.Expires).UTC(), Epoch: l.Epoch})
			}
			return nil
		})
	})
	return out, err
}

func getRun(tx *bbolt.Tx, k []byte) (aggstore.Run, error) {
	v := tx.Bucket(bRuns).Get(k)
	if v == nil {
		return aggstore.Run{}, fmt.Errorf("run %x: %w: indexed but missing", k, ErrCorrupt)
	}
	var r aggstore.Run
	if err := json.Unmarshal(v, &r); err != nil {
		return aggstore.Run{}, corrupt("run", k, err)
	}
	if len(k) != 8 || r.ID != int64(binary.BigEndian.Uint64(k)) {
		return aggstore.Run{}, fmt.Errorf("run %x: %w: id %d", k, ErrCorrupt, r.ID)
	}
	return r, nil
}

func putRun(tx *bbolt.Tx, r *aggstore.Run) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return tx.Bucket(bRuns).Put(u64(uint64(r.ID)), v)
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

// StartRun implements aggstore.Store.
func (s *Store) StartRun(ctx context.Context, r aggstore.Run) (int64, error) {
	if r.Node == "" || r.Source == "" {
		return 0, invalid("run of %q by node %q", r.Source, r.Node)
	}
	err := s.do(ctx, true, func(tx *bbolt.Tx) error {
		now := s.now()
		l, found, err := getLease(tx, r.Source)
		if err != nil {
			return err
		}
		if !found || l.Node != r.Node || l.Instance != string(s.instance) || !live(l, now) {
			return fmt.Errorf("boltstore: run of %q by %q: %w", r.Source, r.Node, aggstore.ErrNotHolder)
		}
		seq, err := tx.Bucket(bRuns).NextSequence()
		if err != nil {
			return err
		}
		r.ID, r.State, r.Epoch = int64(seq), aggstore.StateRunning, l.Epoch
		if r.Start.IsZero() {
			r.Start = now
		}
		r.Start, r.End = r.Start.UTC(), time.Time{}
		if err := putRun(tx, &r); err != nil {
			return err
		}
		idx, err := tx.Bucket(bBySource).CreateBucketIfNotExists([]byte(r.Source))
		if err != nil {
			return err
		}
		if err := idx.Put(u64(seq), nil); err != nil {
			return err
		}
		return tx.Bucket(bRunning).Put(u64(seq), nil)
	})
	if err != nil {
		return 0, err
	}
	return r.ID, nil
}

// FinishRun implements aggstore.Store. The run's Source, Node, Mode and
// Start stay as StartRun recorded them; next.Source may be left empty
// (the run's), and next.LastRun 0 (r.ID).
func (s *Store) FinishRun(ctx context.Context, r aggstore.Run, next aggstore.Schedule) error {
	if r.State != aggstore.StateOK && r.State != aggstore.StateFailed {
		return invalid("run %d finished with state %q", r.ID, r.State)
	}
	return s.do(ctx, true, func(tx *bbolt.Tx) error {
		k := u64(uint64(r.ID))
		if r.ID <= 0 || tx.Bucket(bRunning).Get(k) == nil {
			return fmt.Errorf("boltstore: run %d: %w", r.ID, aggstore.ErrNotRunning)
		}
		old, err := getRun(tx, k)
		if err != nil {
			return err
		}
		if next.Source == "" {
			next.Source = old.Source
		}
		if next.Source != old.Source {
			return invalid("run %d of %q finished with the schedule of %q", r.ID, old.Source, next.Source)
		}
		l, found, err := getLease(tx, old.Source)
		if err != nil {
			return err
		}
		if !found || l.Node != old.Node || l.Epoch != old.Epoch {
			return fmt.Errorf("boltstore: run %d (epoch %d): %w", r.ID, old.Epoch, aggstore.ErrFenced)
		}
		if next.LastRun == 0 {
			next.LastRun = r.ID
		}
		r.Source, r.Node, r.Mode, r.Start, r.Epoch = old.Source, old.Node, old.Mode, old.Start, old.Epoch
		if r.End.IsZero() {
			r.End = s.now()
		}
		r.End = r.End.UTC()
		if err := putRun(tx, &r); err != nil {
			return err
		}
		if err := tx.Bucket(bRunning).Delete(k); err != nil {
			return err
		}
		return putSchedule(tx, next)
	})
}

// Fence implements aggstore.Store.
func (s *Store) Fence(ctx context.Context, run int64) error {
	return s.do(ctx, false, func(tx *bbolt.Tx) error {
		k := u64(uint64(run))
		if run <= 0 || tx.Bucket(bRunning).Get(k) == nil {
			return fmt.Errorf("boltstore: run %d is not running: %w", run, aggstore.ErrFenced)
		}
		r, err := getRun(tx, k)
		if err != nil {
			return err
		}
		l, found, err := getLease(tx, r.Source)
		if err != nil {
			return err
		}
		if !found || l.Node != r.Node || l.Epoch != r.Epoch || !live(l, s.now()) {
			return fmt.Errorf("boltstore: run %d (epoch %d): %w", run, r.Epoch, aggstore.ErrFenced)
		}
		return nil
	})
}

// InterruptRuns implements aggstore.Store.
func (s *Store) InterruptRuns(ctx context.Context, node string, now time.Time) (int, error) {
	n := 0
	err := s.do(ctx, true, func(tx *bbolt.Tx) error {
		var err error
		n, err = s.interrupt(tx, now, func(r *aggstore.Run) bool { return r.Node == node })
		return err
	})
	return n, err
}

// Runs implements aggstore.Store.
func (s *Store) Runs(ctx context.Context, source string, limit int) ([]aggstore.Run, error) {
	var out []aggstore.Run
	err := s.do(ctx, false, func(tx *bbolt.Tx) error {
		idx := tx.Bucket(bBySource).Bucket([]byte(source))
		if idx == nil {
			return nil
		}
		c := idx.Cursor()
		for k, _ := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, _ = c.Prev() {
			r, err := getRun(tx, k)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

func putSchedule(tx *bbolt.Tx, sc aggstore.Schedule) error {
	sc.Next, sc.LastSuccess = utc(sc.Next), utc(sc.LastSuccess)
	v, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	return tx.Bucket(bSchedules).Put([]byte(sc.Source), v)
}

// PutSchedule implements aggstore.Store.
func (s *Store) PutSchedule(ctx context.Context, sc aggstore.Schedule) error {
	if sc.Source == "" {
		return invalid("schedule without a source")
	}
	return s.do(ctx, true, func(tx *bbolt.Tx) error { return putSchedule(tx, sc) })
}

// Schedules implements aggstore.Store.
func (s *Store) Schedules(ctx context.Context) ([]aggstore.Schedule, error) {
	var out []aggstore.Schedule
	err := s.do(ctx, false, func(tx *bbolt.Tx) error {
		return tx.Bucket(bSchedules).ForEach(func(k, v []byte) error {
			var sc aggstore.Schedule
			if err := json.Unmarshal(v, &sc); err != nil {
				return corrupt("schedule", k, err)
			}
			if !bytes.Equal([]byte(sc.Source), k) {
				return corrupt("schedule", k, fmt.Errorf("source %q", sc.Source))
			}
			out = append(out, sc)
			return nil
		})
	})
	return out, err
}

// Forget implements aggstore.Store.
func (s *Store) Forget(ctx context.Context, source string) error {
	return s.do(ctx, true, func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bSchedules).Delete([]byte(source)); err != nil {
			return err
		}
		return tx.Bucket(bLeases).Delete([]byte(source))
	})
}

// PruneRuns implements aggstore.Store.
func (s *Store) PruneRuns(ctx context.Context, source string, keep int) (int, error) {
	n := 0
	err := s.do(ctx, true, func(tx *bbolt.Tx) error {
		idx := tx.Bucket(bBySource).Bucket([]byte(source))
		if idx == nil {
			return nil
		}
		var drop [][]byte
		seen := 0
		c := idx.Cursor()
		for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
			seen++
			if seen <= keep || tx.Bucket(bRunning).Get(k) != nil {
				continue
			}
			drop = append(drop, slices.Clone(k))
		}
		for _, k := range drop {
			if err := idx.Delete(k); err != nil {
				return err
			}
			if err := tx.Bucket(bRuns).Delete(k); err != nil {
				return err
			}
		}
		n = len(drop)
		return nil
	})
	return n, err
}
