package destination

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/internal/boltdb"
	"github.com/resourcesync-go/resourcesync/internal/boltmem"
	bolt "go.etcd.io/bbolt"
)

// ErrLocked is returned when another run holds DEST's state.
var ErrLocked = errors.New("another resourcesync run is using this destination")

// ErrState is a state directory that cannot be used (corrupt, or a mirror of
// another Source).
var ErrState = errors.New("destination state")

// Record is what the state remembers of one installed resource.
type Record struct {
	Set    string `json:"set"`
	Path   string `json:"path"` // relative to DEST, slash-separated
	Length int64  `json:"len"`
	// Digests of the installed bytes (hex), those computed when installing.
	SHA256 string `json:"sha256,omitempty"`
	MD5    string `json:"md5,omitempty"`
	SHA1   string `json:"sha1,omitempty"`
	// What the Source said: its hash attribute as written, lastmod and the
	// datetime of the change that was applied.
	RemoteHash string    `json:"rhash,omitempty"`
	LastMod    time.Time `json:"lastmod,omitzero"`
	Changed    time.Time `json:"changed,omitzero"`
	// MTime is the file's modification time as installed (Unix ns); with
	// Length it tells cheaply whether someone else changed the file since.
	MTime int64 `json:"mtime"`
	// NotOwned marks a file that was here before resourcesync, with the
	// bytes the Source lists: it is kept in step, but never deleted.
	NotOwned bool `json:"notowned,omitempty"`
	// Version is the storage's version of the object as installed or
	// adopted, with Options.Target (an S3 ETag): the object is still ours
	// while it has it, and an overwrite or a removal is conditional on
	// the version checked. "" in a local DEST (length and mtime tell).
	Version string `json:"version,omitempty"`
}

// Checkpoint is a set's synchronized point.
type Checkpoint struct {
	Set            string `json:"set"`
	CapabilityList string `json:"capabilitylist,omitempty"`
	// Baseline is true once a baseline has completed without failures.
	Baseline bool `json:"baseline"`
	// At is the `at` of the Resource List the last baseline used.
	At time.Time `json:"at,omitzero"`
	// Until is the point up to which every change is durable here: the
	// next incremental run applies changes at or after it.
	Until   time.Time `json:"until,omitzero"`
	LastRun time.Time `json:"last_run,omitzero"`
	// DeleteRefusedOf is the set's size when its deletions were last
	// refused (Options.MaxDelete), until a run allows them: the size
	// later runs measure those deletions against, at most.
	DeleteRefusedOf int `json:"delete_refused_of,omitempty"`
	// Resume, for an LDES, are the nodes the next run starts from: those
	// the last run read that may still change (feedsync.Result.Frontier).
	Resume []string `json:"resume,omitempty"`
}

var (
	bucketRes  = []byte("resources") // URI → Record
	bucketSets = []byte("sets")      // set name → Checkpoint
	bucketMeta = []byte("meta")      // "base" → Source base URL
	bucketPath = []byte("paths")     // relative path → URI of its record
)

// layout is the version of the state's keys: "2" has URIs in normal form
// (NormalizeURI) and the paths bucket.
const layout = "2"

// state wraps the embedded database in DEST/.resourcesync/state.db. The
// database's exclusive file lock is what keeps two runs apart.
type state struct {
	db       *bolt.DB
	readOnly bool
	unmark   func() // removes the holder record (boltdb.MarkHolder)
	rel      releaser
	// fence is Options.Fence: asked before every write (update).
	fence func(context.Context) error

	// fresh: the state guards no file (empty) and no commit of this open
	// was synced yet. Read and written under bbolt's writer lock (inside
	// a write transaction), like db.NoSync.
	fresh bool
	// later holds meta values to write with the next commit (setMeta).
	laterMu sync.Mutex
	later   map[string]string
}

// releaseEvery is how many records a pass reads between two releases of
// a database's mapped pages (boltmem.Release). A page fault maps up to 16
// neighbouring pages (the kernel's fault-around), so lookups in random
// order (an incremental run's changes) hold up to ~64 KB each until the
// next release: 256 keep that under ~16 MB. Reads in key order (a
// baseline, an audit, a sweep) touch few pages and pay nothing measurable
// for the releases.
const releaseEvery = 256

// releaser gives a database's mapped pages back every releaseEvery
// records read. touch must not be called inside a transaction (Release
// opens one, and a writer waiting for the mmap lock between the two would
// deadlock them).
type releaser struct{ n atomic.Int64 }

func (r *releaser) touch(db *bolt.DB, n int) {
	if db != nil && r.n.Add(int64(n)) >= releaseEvery {
		r.n.Store(0)
		boltmem.Release(db)
	}
}

func openState(dest string, readOnly bool) (*state, error) {
	dir := filepath.Join(dest, StateDirName)
	p := filepath.Join(dir, "state.db")
	if err := noLink(dir, true); err != nil {
		return nil, err
	}
	if readOnly {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			return &state{readOnly: true}, nil // nothing synced yet
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrState, err)
	}
	if err := noLink(p, false); err != nil {
		return nil, err
	}
	// The state stays private whatever the umask (it is not part of the
	// mirror); the mirrored files honour the umask.
	// The freelist is persisted: without it every open rebuilds it by
	// reading every page of the file, which makes the resident set of even
	// a run with nothing to do the size of the state. A state written
	// without it (by an earlier version) is scanned once, at its first
	// writable open, and has it from then on (bbolt writes it then).
	if !readOnly {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			createState(p)
		}
	}
	db, err := boltdb.Open(p, &bolt.Options{Timeout: 300 * time.Millisecond, ReadOnly: readOnly, FreelistType: bolt.FreelistMapType})
	if errors.Is(err, boltdb.ErrLocked) {
		// Say which command holds it and what to do (issue 32 item 3).
		if h := boltdb.Holder(p); h != "" {
			return nil, fmt.Errorf("%w: %s is locked by %s; stop it, or give this run another DEST (or --state)", ErrLocked, p, h)
		}
		return nil, fmt.Errorf("%w: %s is locked", ErrLocked, p)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %v", ErrState, p, err)
	}
	// Whatever the open read (a freelist rebuild, above) is given back.
	boltmem.Release(db)
	st := &state{db: db, readOnly: readOnly}
	if !readOnly {
		st.fresh = st.empty()
	}
	if !readOnly && !st.current() {
		err = st.commit(true, func(tx *bolt.Tx) error {
			for _, b := range stateBuckets {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			return migrate(tx)
		})
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("%w: %v", ErrState, err)
		}
	}
	if !readOnly {
		st.unmark = boltdb.MarkHolder(p)
	}
	return st, nil
}

// stateBuckets are the state's buckets.
var stateBuckets = [][]byte{bucketRes, bucketSets, bucketMeta, bucketPath, bucketIntent}

// empty reports whether the state has no record, no checkpoint and no
// intent: then it guards no file in DEST (a run installs nothing before
// its intents are durable), and it is fresh (state.commit), whoever
// created it.
func (s *state) empty() bool {
	empty := true
	s.db.View(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketRes, bucketSets, bucketIntent} {
			if bk := tx.Bucket(b); bk != nil {
				if k, _ := bk.Cursor().First(); k != nil {
					empty = false
				}
			}
		}
		return nil
	})
	return empty
}

// current reports whether the state has every bucket and the current
// layout: then opening it writes nothing (a commit that changes nothing
// still costs two fdatasync).
func (s *state) current() bool {
	ok := true
	s.db.View(func(tx *bolt.Tx) error {
		for _, b := range stateBuckets {
			ok = ok && tx.Bucket(b) != nil
		}
		ok = ok && string(tx.Bucket(bucketMeta).Get([]byte("layout"))) == layout
		return nil
	})
	return ok
}

// update runs fn in a write transaction once the fence allows it; the
// commit is durable when update returns.
func (s *state) update(fn func(tx *bolt.Tx) error) error { return s.commit(false, fn) }

// commit runs fn in a write transaction, with the meta values setMeta
// left for it. A setup commit of a fresh state (the buckets, the
// start-up's meta values and the run mark, in a state that has no record,
// checkpoint or intent) is not synced; any other commit is, and is then
// the state's first durable point: its fdatasync writes every page of
// the file, the setup commits' with its own. A new state is moreover
// written whole, without bbolt's fdatasync of a new file, where the
// system allows (createState).
//
// Why a fresh state may go unsynced until then. A kill -9 loses nothing
// written (the pages are the kernel's), so only a crash of the system or
// a power loss can lose the setup commits, and they describe no file: a
// run installs nothing before its intents are committed (intents.go), by
// a durable commit, and a fresh state has no record. Such a crash leaves
// no state.db (its name was not durable), an empty one (bbolt initialises
// it again), the state as it was, or a damaged one that the next run
// refuses (ErrState) as it would any damaged state; in every case DEST
// holds no file the state answered for, so removing the state directory
// loses nothing. A state with a record, a checkpoint or an intent is
// never fresh: each of its commits is synced. Syncing the setup commits
// cost two fdatasync each and bbolt's fsync of the grown file, a tenth
// of a second or more on a busy disk, for a state that is trusted only
// once a commit that matters is durable.
func (s *state) commit(setup bool, fn func(tx *bolt.Tx) error) error {
	if s.fence != nil {
		if err := s.fence(context.Background()); err != nil {
			return fmt.Errorf("fenced: %w", err)
		}
	}
	s.laterMu.Lock()
	later := maps.Clone(s.later)
	s.laterMu.Unlock()
	return s.db.Update(func(tx *bolt.Tx) error {
		// Under the writer lock: bbolt reads both when this commits.
		lazy := setup && s.fresh
		s.db.NoSync, s.db.NoGrowSync = lazy, lazy
		if len(later) > 0 {
			b := tx.Bucket(bucketMeta)
			for k, v := range later {
				if err := b.Put([]byte(k), []byte(v)); err != nil {
					return err
				}
			}
			tx.OnCommit(func() {
				s.laterMu.Lock()
				for k, v := range later {
					if s.later[k] == v {
						delete(s.later, k)
					}
				}
				s.laterMu.Unlock()
			})
		}
		if err := fn(tx); err != nil {
			return err
		}
		if !lazy {
			s.fresh = false
			syncedCommits.Add(1)
		}
		return nil
	})
}

// syncedCommits counts the state commits that were synced (two
// fdatasync each), for the tests that keep a run's count down.
var syncedCommits atomic.Int64

// migrate brings a state written by an earlier version to the current
// layout: record keys in normal form, and the index of paths.
func migrate(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if string(meta.Get([]byte("layout"))) == layout {
		return nil
	}
	res, paths := tx.Bucket(bucketRes), tx.Bucket(bucketPath)
	type kv struct{ k, v []byte }
	var all []kv
	if err := res.ForEach(func(k, v []byte) error {
		all = append(all, kv{bytes.Clone(k), bytes.Clone(v)})
		return nil
	}); err != nil {
		return err
	}
	for _, r := range all {
		uri := NormalizeURI(string(r.k))
		rec, err := decodeRecord(string(r.k), r.v)
		if err != nil {
			return fmt.Errorf("record %q: %v", r.k, err)
		}
		if uri != string(r.k) {
			if err := res.Delete(r.k); err != nil {
				return err
			}
			if res.Get([]byte(uri)) != nil {
				continue // an equivalent spelling was recorded already
			}
			if err := res.Put([]byte(uri), encodeRecord(uri, &rec)); err != nil {
				return err
			}
		}
		if paths.Get([]byte(rec.Path)) == nil {
			if err := paths.Put([]byte(rec.Path), []byte(uri)); err != nil {
				return err
			}
		}
	}
	return meta.Put([]byte("layout"), []byte(layout))
}

func (s *state) Close() error {
	if s.db == nil {
		return nil
	}
	if s.unmark != nil {
		s.unmark()
		s.unmark = nil
	}
	return s.db.Close()
}

func (s *state) view(fn func(tx *bolt.Tx) error) error {
	if s.db == nil {
		return nil
	}
	return s.db.View(fn)
}

// meta reads a meta value ("" when absent).
func (s *state) meta(key string) (v string, err error) {
	s.laterMu.Lock()
	v, ok := s.later[key]
	s.laterMu.Unlock()
	if ok {
		return v, nil
	}
	err = s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketMeta); b != nil {
			v = string(b.Get([]byte(key)))
		}
		return nil
	})
	return v, err
}

func (s *state) putMeta(key, v string) error {
	return s.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put([]byte(key), []byte(v))
	})
}

// metaPending reports whether setMeta left a value of key that no
// commit wrote yet.
func (s *state) metaPending(key string) bool {
	s.laterMu.Lock()
	defer s.laterMu.Unlock()
	_, ok := s.later[key]
	return ok
}

// setMeta sets a meta value that is written with the next commit, not
// one of its own: the values a run's start-up records (the Source's base,
// the Target, the mtime granularity) then cost nothing apart from its run
// mark's commit, and a value that did not change costs nothing at all.
// Nothing reads them from the file before that commit: meta sees them.
func (s *state) setMeta(key, v string) error {
	if cur, err := s.meta(key); err != nil || cur == v {
		return err
	}
	s.laterMu.Lock()
	defer s.laterMu.Unlock()
	if s.later == nil {
		s.later = map[string]string{}
	}
	s.later[key] = v
	return nil
}

func (s *state) checkpoint(set string) (cp Checkpoint, err error) {
	cp.Set = set
	err = s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSets)
		if b == nil {
			return nil
		}
		if v := b.Get([]byte(set)); v != nil {
			return json.Unmarshal(v, &cp)
		}
		return nil
	})
	if err != nil {
		err = fmt.Errorf("%w: checkpoint of set %q: %v", ErrState, set, err)
	}
	return cp, err
}

func (s *state) putCheckpoint(cp Checkpoint) error {
	v, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	return s.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSets).Put([]byte(cp.Set), v)
	})
}

// get returns the record of uri, or ok=false.
func (s *state) get(uri string) (r Record, ok bool, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRes)
		if b == nil {
			return nil
		}
		v := b.Get([]byte(uri))
		if v == nil {
			return nil
		}
		ok = true
		r, err = decodeRecord(uri, v)
		return err
	})
	s.rel.touch(s.db, 1)
	return r, ok, err
}

// stateOp is one change to the resource records.
type stateOp struct {
	uri    string
	rec    *Record // nil deletes
	remove bool
}

// apply writes the ops in one transaction. A record installed at a path
// another URI's record names replaces that record (the file is the new
// URI's now), so that no record names a file it did not write.
func (s *state) apply(ops []stateOp) error {
	defer s.rel.touch(s.db, 2*len(ops))
	for len(ops) > 0 {
		n, err := s.applySome(ops)
		if err != nil {
			return err
		}
		if ops = ops[n:]; len(ops) > 0 {
			boltmem.Release(s.db)
		}
	}
	return nil
}

// maxTxNodes bounds the pages one transaction of apply modifies. Its
// commit reads the header of every page it replaces (to free it), and
// each such read maps up to 64 KB (fault-around): ops in random order
// (an incremental run's changes) would otherwise map ~64 KB each until
// the commit, the whole state for a large batch. A batch in key order
// (a baseline) modifies few pages and stays one transaction. Splitting a
// batch is safe: its files are durable already, and each record stands
// alone, as between two batches.
const maxTxNodes = 256

// applySome applies ops in one transaction, up to maxTxNodes modified
// pages, and returns how many it applied.
func (s *state) applySome(ops []stateOp) (int, error) {
	applied := 0
	err := s.update(func(tx *bolt.Tx) error {
		b, paths, intents := tx.Bucket(bucketRes), tx.Bucket(bucketPath), tx.Bucket(bucketIntent)
		// Records mostly arrive in key order (lists are sorted): full
		// pages then keep the file, and what a pass reads, small.
		b.FillPercent, paths.FillPercent = 0.9, 0.9
		applied = 0
		for _, op := range ops {
			if applied > 0 {
				if st := tx.Stats(); st.GetNodeCount() >= maxTxNodes {
					return nil
				}
			}
			applied++
			key := []byte(op.uri)
			if old := b.Get(key); old != nil {
				r, err := decodeRecord(op.uri, old)
				if err != nil {
					return fmt.Errorf("record %q: %v", op.uri, err)
				}
				if (op.rec == nil || op.rec.Path != r.Path) && string(paths.Get([]byte(r.Path))) == op.uri {
					if err := paths.Delete([]byte(r.Path)); err != nil {
						return err
					}
				}
			}
			if op.rec == nil {
				if err := b.Delete(key); err != nil {
					return err
				}
				continue
			}
			if prev := paths.Get([]byte(op.rec.Path)); prev != nil && string(prev) != op.uri {
				if err := b.Delete(bytes.Clone(prev)); err != nil {
					return err
				}
			}
			if err := b.Put(key, encodeRecord(op.uri, op.rec)); err != nil {
				return err
			}
			if err := paths.Put([]byte(op.rec.Path), key); err != nil {
				return err
			}
			// The record stands for the intent now (intents.go).
			if err := intents.Delete([]byte(op.rec.Path)); err != nil {
				return err
			}
		}
		return nil
	})
	return applied, err
}

// DecodeRecord reads a record as the state's resources bucket stores it
// under the key uri (for tools and tests that read a state directly).
func DecodeRecord(uri string, v []byte) (Record, error) { return decodeRecord(uri, v) }

// lookup is pathOwner(rel) and get(uri) in one read transaction.
func (s *state) lookup(uri, rel string) (owner string, r Record, ok bool, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketPath); b != nil {
			owner = string(b.Get([]byte(rel)))
		}
		b := tx.Bucket(bucketRes)
		if b == nil {
			return nil
		}
		v := b.Get([]byte(uri))
		if v == nil {
			return nil
		}
		ok = true
		r, err = decodeRecord(uri, v)
		return err
	})
	s.rel.touch(s.db, 2)
	return owner, r, ok, err
}

// pathOwner returns the URI whose record names rel, or "".
func (s *state) pathOwner(rel string) (uri string, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketPath); b != nil {
			uri = string(b.Get([]byte(rel)))
		}
		return nil
	})
	s.rel.touch(s.db, 1)
	return uri, err
}

// each calls fn for every record of set, in URI order, outside of any
// transaction held across calls (records are read in pages) so that fn
// may write to the state.
func (s *state) each(set string, fn func(uri string, r Record) error) error {
	var after []byte
	for {
		type kv struct {
			uri string
			r   Record
		}
		var page []kv
		err := s.view(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketRes)
			if b == nil {
				return nil
			}
			c := b.Cursor()
			var k, v []byte
			if after == nil {
				k, v = c.First()
			} else {
				k, v = c.Seek(after)
				if k != nil && string(k) == string(after) {
					k, v = c.Next()
				}
			}
			for ; k != nil && len(page) < 1000; k, v = c.Next() {
				r, err := decodeRecord(string(k), v)
				if err != nil {
					return fmt.Errorf("%w: record %q: %v", ErrState, k, err)
				}
				if set == "" || r.Set == set {
					page = append(page, kv{string(k), r})
				}
				after = append(after[:0], k...)
			}
			if k == nil {
				after = nil
			}
			return nil
		})
		if err != nil {
			return err
		}
		s.rel.touch(s.db, 1000)
		for _, p := range page {
			if err := fn(p.uri, p.r); err != nil {
				return err
			}
		}
		if after == nil {
			return nil
		}
	}
}

// noLink refuses a state path that is a symbolic link (or of the wrong
// kind): the state directory is opened by path, and a link planted in DEST
// would otherwise make the run create, rewrite or empty files outside DEST.
// The tool itself never creates links, so one here was put there by
// someone else.
func noLink(p string, dir bool) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrState, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%w: %w", ErrState, &fetch.SymlinkError{Path: p, Op: "open the state"})
	}
	if fi.IsDir() != dir {
		return fmt.Errorf("%w: %s is not a %s", ErrState, p, map[bool]string{true: "directory", false: "regular file"}[dir])
	}
	return nil
}
