package destination

import (
	"os"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/resourcesync-go/resourcesync/internal/boltdb"
)

// seenSet maps relative paths to the URI that claimed each, kept on disk,
// so that a run over a list of millions of entries can later ask which of
// its records the list no longer names, and notice two URIs that map to
// one file, without holding the list in memory.
//
// Up to seenInMemory paths it is a map and nothing more: the scratch
// database (a file created, initialised with bbolt's fdatasync, and
// removed) cost a small run more than its whole list, and it is created
// only when the set grows past that.
type seenSet struct {
	dir     string // where the database goes when the set spills
	db      *bolt.DB
	path    string
	pending map[string]string
	rel     releaser
}

var bucketSeen = []byte("seen")

// released is the claim of a path whose file a deletion removed: any URI
// may claim it next.
const released = "\x00"

// seenInMemory is how many paths the set holds in memory before it
// spills to its database: a few MB at most (a path and a URI each).
const seenInMemory = 16384

func newSeen(dir string) (*seenSet, error) {
	return &seenSet{dir: dir, pending: map[string]string{}}, nil
}

// openScratch creates a database for data that nothing needs after the
// run, with the given buckets.
func openScratch(dir, pattern string, buckets ...[]byte) (*bolt.DB, string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, "", err
	}
	f.Close()
	// Scratch data: nothing here needs to survive a crash.
	db, err := boltdb.Open(f.Name(), &bolt.Options{NoSync: true, NoFreelistSync: true, NoGrowSync: true})
	if err != nil {
		os.Remove(f.Name())
		return nil, "", err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range buckets {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		os.Remove(f.Name())
		return nil, "", err
	}
	return db, f.Name(), nil
}

// seenBatch is how many paths are held before they are written: a batch
// costs its entries and, while it is written, bbolt's nodes for them,
// several MB at 20,000.
const seenBatch = 4096

// add marks rel as named by uri.
func (s *seenSet) add(rel, uri string) error {
	s.pending[rel] = uri
	if s.db == nil && len(s.pending) < seenInMemory || s.db != nil && len(s.pending) < seenBatch {
		return nil
	}
	return s.spill()
}

// claim marks rel as named by uri and returns the URI that named it
// before, if any (not released): another one, or uri itself when it is
// named twice.
func (s *seenSet) claim(rel, uri string) (string, error) {
	if prev := s.get(rel); prev != "" && prev != released {
		return prev, nil
	}
	return "", s.add(rel, uri)
}

// flush writes what is pending to the database, if the set has one (a
// set still in memory stays so).
func (s *seenSet) flush() error {
	if s.db == nil {
		return nil
	}
	return s.spill()
}

// spill writes what is pending to the database, created first if need be.
func (s *seenSet) spill() error {
	if len(s.pending) == 0 {
		return nil
	}
	if s.db == nil {
		db, path, err := openScratch(s.dir, "seen-*.db", bucketSeen)
		if err != nil {
			return err
		}
		s.db, s.path = db, path
	}
	keys := make([]string, 0, len(s.pending))
	for k := range s.pending {
		keys = append(keys, k)
	}
	sort.Strings(keys) // sequential inserts keep bbolt's pages full
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSeen)
		b.FillPercent = 0.9
		for _, k := range keys {
			if err := b.Put([]byte(k), []byte(s.pending[k])); err != nil {
				return err
			}
		}
		return nil
	})
	s.rel.touch(s.db, len(keys))
	clear(s.pending)
	return err
}

// get returns the URI that named rel, or "".
func (s *seenSet) get(rel string) (uri string) {
	if v, ok := s.pending[rel]; ok || s.db == nil {
		return v
	}
	s.db.View(func(tx *bolt.Tx) error {
		uri = string(tx.Bucket(bucketSeen).Get([]byte(rel)))
		return nil
	})
	s.rel.touch(s.db, 1)
	return uri
}

// has reports whether rel was named (and not released).
func (s *seenSet) has(rel string) bool {
	v := s.get(rel)
	return v != "" && v != released
}

func (s *seenSet) close() {
	if s.db != nil {
		s.db.Close()
		os.Remove(s.path)
		s.db = nil
	}
	clear(s.pending)
}
