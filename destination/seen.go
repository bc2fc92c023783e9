package destination

import (
	"os"
	"sort"

	bolt "go.etcd.io/bbolt"
)

// seenSet is a set of relative paths kept on disk, so that a run over a
// list of millions of entries can later ask which of its records the list
// no longer names without holding the list in memory.
type seenSet struct {
	db   *bolt.DB
	path string
	buf  []string
}

var (
	bucketSeen = []byte("seen")
	one        = []byte{1}
)

func newSeen(dir string) (*seenSet, error) {
	db, path, err := openScratch(dir, "seen-*.db", bucketSeen)
	if err != nil {
		return nil, err
	}
	return &seenSet{db: db, path: path}, nil
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
	db, err := bolt.Open(f.Name(), 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true, NoGrowSync: true})
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

func (s *seenSet) add(rel string) error {
	s.buf = append(s.buf, rel)
	if len(s.buf) >= 20000 {
		return s.flush()
	}
	return nil
}

func (s *seenSet) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	sort.Strings(s.buf) // sequential inserts keep bbolt's pages full
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSeen)
		for _, k := range s.buf {
			if err := b.Put([]byte(k), one); err != nil {
				return err
			}
		}
		return nil
	})
	s.buf = s.buf[:0]
	return err
}

// has must follow a flush of everything added before.
func (s *seenSet) has(rel string) (ok bool) {
	s.db.View(func(tx *bolt.Tx) error {
		ok = tx.Bucket(bucketSeen).Get([]byte(rel)) != nil
		return nil
	})
	return ok
}

func (s *seenSet) close() {
	s.db.Close()
	os.Remove(s.path)
}
