package destination

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"

	"github.com/resourcesync-go/resourcesync/rs"
	bolt "go.etcd.io/bbolt"
)

// changeSpool keeps the last change per URI read from Change Lists in a
// scratch database, so that catching up on millions of changes holds a
// bounded batch in memory, not every changed resource. Entries are read
// back oldest change first.
//
// Two buckets: last maps a URI to the key of its change in byTime, which
// is the change's time (12 bytes, ordered) followed by the URI and holds
// the entry as JSON.
type changeSpool struct {
	dir     string
	db      *bolt.DB // nil until the first flush that stores something
	path    string
	pending map[string]*rs.Entry
	removed []string
	n       int // URIs stored
	batch   int
	rel     releaser
}

var (
	bucketLast   = []byte("last")
	bucketByTime = []byte("bytime")
)

// spoolBatch is how many changes are merged into the database at once.
const spoolBatch = 4096

func newChangeSpool(dir string) *changeSpool {
	return &changeSpool{dir: dir, pending: map[string]*rs.Entry{}, batch: spoolBatch}
}

// add keeps en unless a later change to the same URI is kept already;
// of two changes at the same time the one added last wins.
func (s *changeSpool) add(en *rs.Entry) error {
	if old := s.pending[en.Loc]; old != nil {
		if c := old.EventTime().Compare(en.EventTime()); c > 0 {
			return nil
		}
	}
	s.pending[en.Loc] = en
	if len(s.pending) >= s.batch {
		return s.flush()
	}
	return nil
}

// remove drops the change kept for uri; it takes effect at the next flush.
func (s *changeSpool) remove(uri string) error {
	s.removed = append(s.removed, uri)
	if len(s.removed) >= s.batch {
		return s.flush()
	}
	return nil
}

// len is the number of URIs with a change; it counts after a flush.
func (s *changeSpool) len() int { return s.n }

func timeKey(t rs.Time, uri string) []byte {
	tt := t.Time()
	k := make([]byte, 12, 12+len(uri))
	binary.BigEndian.PutUint64(k, uint64(tt.Unix())^1<<63)
	binary.BigEndian.PutUint32(k[8:], uint32(tt.Nanosecond()))
	return append(k, uri...)
}

func (s *changeSpool) open() error {
	if s.db != nil {
		return nil
	}
	db, path, err := openScratch(s.dir, "changes-*.db", bucketLast, bucketByTime)
	if err != nil {
		return err
	}
	s.db, s.path = db, path
	return nil
}

// flush merges the pending changes and removals into the database.
func (s *changeSpool) flush() error {
	if len(s.pending) == 0 && (len(s.removed) == 0 || s.db == nil) {
		s.removed = s.removed[:0]
		return nil
	}
	if err := s.open(); err != nil {
		return err
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		last, byTime := tx.Bucket(bucketLast), tx.Bucket(bucketByTime)
		for uri, en := range s.pending {
			k := timeKey(en.EventTime(), uri)
			if old := bytes.Clone(last.Get([]byte(uri))); old != nil {
				if c := bytes.Compare(old[:12], k[:12]); c > 0 {
					continue // a later change is kept already
				}
				if err := byTime.Delete(old); err != nil {
					return err
				}
			} else {
				s.n++
			}
			v, err := json.Marshal(en)
			if err != nil {
				return fmt.Errorf("change to %s: %w", uri, err)
			}
			if err := last.Put([]byte(uri), k); err != nil {
				return err
			}
			if err := byTime.Put(k, v); err != nil {
				return err
			}
		}
		for _, uri := range s.removed {
			old := bytes.Clone(last.Get([]byte(uri)))
			if old == nil {
				continue
			}
			if err := byTime.Delete(old); err != nil {
				return err
			}
			if err := last.Delete([]byte(uri)); err != nil {
				return err
			}
			s.n--
		}
		return nil
	})
	s.rel.touch(s.db, len(s.pending)+len(s.removed))
	clear(s.pending)
	s.removed = s.removed[:0]
	return err
}

// get returns the change kept for uri, or nil. It must follow a flush of
// everything added before.
func (s *changeSpool) get(uri string) (*rs.Entry, error) {
	if s.db == nil {
		return nil, nil
	}
	var en *rs.Entry
	err := s.db.View(func(tx *bolt.Tx) error {
		k := tx.Bucket(bucketLast).Get([]byte(uri))
		if k == nil {
			return nil
		}
		en = new(rs.Entry)
		return json.Unmarshal(tx.Bucket(bucketByTime).Get(k), en)
	})
	s.rel.touch(s.db, 1)
	return en, err
}

// each calls fn with every change kept, oldest first (ties in URI order),
// and returns fn's first error. It must follow a flush; fn must not add or
// remove. Changes are read in pages, outside of any transaction held
// while fn runs, so that the pages read can be released.
func (s *changeSpool) each(fn func(*rs.Entry) error) error {
	if s.db == nil {
		return nil
	}
	var after []byte
	for {
		var page []*rs.Entry
		err := s.db.View(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketByTime).Cursor()
			k, v := c.First()
			if after != nil {
				if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			for ; k != nil && len(page) < 1000; k, v = c.Next() {
				en := new(rs.Entry)
				if err := json.Unmarshal(v, en); err != nil {
					return fmt.Errorf("%w: spooled change to %s: %v", ErrState, k[12:], err)
				}
				page = append(page, en)
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
		s.rel.touch(s.db, len(page))
		for _, en := range page {
			if err := fn(en); err != nil {
				return err
			}
		}
		if after == nil {
			return nil
		}
	}
}

func (s *changeSpool) close() {
	if s != nil && s.db != nil {
		s.db.Close()
		os.Remove(s.path)
		s.db = nil
	}
}
