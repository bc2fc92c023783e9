package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/resourcesync-go/resourcesync/internal/boltdb"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// FileName is the store's file inside a store directory.
const FileName = "graph.db"

// PathIn returns the store file of the store directory dir.
func PathIn(dir string) string { return filepath.Join(dir, FileName) }

const formatVersion = 2 // 2: short literals inline in index keys

// pageSize is the page size of new store files. 16 KiB pages made loads
// about 1.5 times faster than 4 KiB ones in BenchmarkLoad (fewer pages per
// commit), but a commit rewrites every page it touched, and a batch's
// dictionary updates touch pages all over the file: with 16 KiB pages the
// peak memory of a load grew by 68 MiB from 100k to 400k triples, with
// 4 KiB by 50 MiB up to 1M (TestLoadMemory). Memory wins.
const pageSize = 4 << 10

var (
	bMeta   = []byte("meta")
	bT2I    = []byte("t2i")
	bI2T    = []byte("i2t")
	bRC     = []byte("rc")
	bGraphs = []byte("graphs")
	bData   = []byte("data")
	bTmp    = []byte("tmp")

	kVersion = []byte("version")
	kNext    = []byte("next")
	kGraph   = []byte("graph")
)

// Options configure Open. The zero value is the default.
type Options struct {
	// LockTimeout is how long Open waits for another process to release
	// the file before it fails with graphstore.ErrLocked. Default 1s.
	LockTimeout time.Duration
	// NoSync skips fsync on commit: for tests and benchmarks only; a
	// crash of the machine (not of the process) may then lose or corrupt
	// the store.
	NoSync bool
	// NoFreelistSync is bbolt's option of that name: a commit does not
	// write the list of free pages (one page per 500 free pages), and
	// Open finds them by walking the whole file instead. It is
	// crash-safe (after a kill -9 the list is rebuilt, TestCrash runs
	// with it), but Open takes time in proportion to the file
	// (BenchmarkOpen: 216 ms instead of 19 ms for 100,000 triples), and
	// with fragments applied in batches (ApplyFragments) it saved no
	// time measurable on a shared machine (BenchmarkApplyFragments), so
	// it is off by default. A long-running process committing single
	// fragments to a store with many free pages may want it.
	NoFreelistSync bool
	// BatchSize is how many triples one transaction of ReplaceGraph (and
	// of deleting a replaced graph) writes. Default 10,000. Memory grows
	// with it (each commit rewrites the B-tree pages it touched, up to a
	// few per triple); smaller batches mean more commits.
	BatchSize int
}

// Store is a graphstore.Store in one bbolt file.
type Store struct {
	db    *bbolt.DB
	path  string
	batch int

	mu     sync.RWMutex // guards closed against Close
	closed bool
}

var _ graphstore.Store = (*Store)(nil)

// OpenDir creates the store directory dir if needed and opens PathIn(dir).
func OpenDir(dir string, opts *Options) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("graph store %s: %w", dir, err)
	}
	return Open(PathIn(dir), opts)
}

// Open opens or creates the store file at path, and deletes what a crashed
// ReplaceGraph left. It fails with graphstore.ErrLocked when another
// process (or another Store in this process) has the file open, and with
// graphstore.ErrCorrupt when it is not a graph store of this version.
func Open(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = time.Second
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 10000
	}
	db, err := openBolt(path, o.LockTimeout, o.NoFreelistSync)
	if err != nil {
		return nil, err
	}
	db.NoSync = o.NoSync
	removeSpools(path)
	s := &Store{db: db, path: path, batch: o.BatchSize}
	if err := s.init(); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.collectGarbage(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func openBolt(path string, timeout time.Duration, noFreelistSync bool) (*bbolt.DB, error) {
	db, err := boltdb.Open(path, &bbolt.Options{Timeout: timeout, FreelistType: bbolt.FreelistMapType, PageSize: pageSize, NoFreelistSync: noFreelistSync})
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, boltdb.ErrLocked):
		return nil, fmt.Errorf("%w: %s (held open elsewhere for more than %v)", graphstore.ErrLocked, path, timeout)
	case errors.Is(err, boltdb.ErrCorrupt), boltdb.Structural(err):
		return nil, fmt.Errorf("%w: %s: %w", graphstore.ErrCorrupt, path, err)
	}
	return nil, fmt.Errorf("graph store %s: %w", path, err)
}

func (s *Store) init() error {
	return s.update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bMeta)
		if meta == nil {
			empty := true
			tx.ForEach(func([]byte, *bbolt.Bucket) error { empty = false; return nil })
			if !empty {
				return fmt.Errorf("%w: %s is a bbolt file but not a graph store", graphstore.ErrCorrupt, s.path)
			}
			meta, _ = tx.CreateBucket(bMeta)
			meta.Put(kVersion, binary.BigEndian.AppendUint32(nil, formatVersion))
			meta.Put(kNext, make([]byte, 8))
			meta.Put(kGraph, make([]byte, 8))
		} else if v := meta.Get(kVersion); len(v) != 4 || binary.BigEndian.Uint32(v) != formatVersion {
			return fmt.Errorf("%w: %s has unknown graph store format %x", graphstore.ErrCorrupt, s.path, v)
		}
		if len(meta.Get(kNext)) != 8 || len(meta.Get(kGraph)) != 8 {
			return fmt.Errorf("%w: %s: bad counters", graphstore.ErrCorrupt, s.path)
		}
		// A ReplaceGraph runs only while its process has the file open,
		// so at Open every label map is a leftover.
		if tx.Bucket(bTmp) != nil {
			if err := tx.DeleteBucket(bTmp); err != nil {
				return err
			}
		}
		for _, name := range [][]byte{bT2I, bI2T, bRC, bGraphs, bData, bTmp} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
}

// collectGarbage deletes the graph ids no name points to: what a crashed
// ReplaceGraph wrote, or the old graph it had not finished deleting.
func (s *Store) collectGarbage() error {
	var garbage []uint64
	err := s.view(func(tx *bbolt.Tx) error {
		live := map[uint64]bool{}
		tx.Bucket(bGraphs).ForEach(func(_, v []byte) error {
			live[be(v)] = true
			return nil
		})
		return tx.Bucket(bData).ForEach(func(k, _ []byte) error {
			if id := be(k); !live[id] {
				garbage = append(garbage, id)
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, gid := range garbage {
		if err := s.dropGraph(gid); err != nil {
			return err
		}
	}
	return nil
}

// Path returns the store's file name.
func (s *Store) Path() string { return s.path }

// Close implements graphstore.Store. It waits for running reads and
// writes (an open Triples loop included) to end.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.db.Close()
}

// view runs fn in a read transaction; update in a write transaction. Both
// turn a bbolt panic (a damaged page) into graphstore.ErrCorrupt.
func (s *Store) view(fn func(*bbolt.Tx) error) error { return s.run(false, fn) }

func (s *Store) update(fn func(*bbolt.Tx) error) error { return s.run(true, fn) }

func (s *Store) run(write bool, fn func(*bbolt.Tx) error) (err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return graphstore.ErrClosed
	}
	err = boltdb.Run(s.db, write, fn)
	switch {
	case errors.Is(err, boltdb.ErrCorrupt):
		return fmt.Errorf("%w: %s: %w", graphstore.ErrCorrupt, s.path, err)
	case errors.Is(err, boltdb.ErrTx):
		return fmt.Errorf("graph store %s: %w", s.path, err)
	}
	return err
}

func be(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func u64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }
