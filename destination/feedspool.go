package destination

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/resourcesync-go/resourcesync/internal/extsort"
	"github.com/resourcesync-go/resourcesync/rs"
)

// changeStore keeps the last change per URI for a run to apply oldest
// first: changeSpool (Change Lists, whose catch-up after a Resource List
// asks for the change of one URI) or feedSpool (a change feed's).
type changeStore interface {
	add(*rs.Entry) error
	remove(uri string) error
	get(uri string) (*rs.Entry, error)
	flush() error
	each(func(*rs.Entry) error) error
	len() int
	close()
}

// feedSpool keeps the newest change per URI of a change feed, read
// newest first, and gives them back oldest first, through plain files
// (internal/extsort) rather than a bbolt database: merging a feed's
// changes into a B+tree keyed by URI touched a page of its memory map per
// change, so that the resident set grew with the feed (see the extsort
// package). Two sorts: by URI, the newest of each kept (of two at the
// same time, the first read: the feed's newest); then by time and URI.
// It has no lookups: a feed has no Resource List to check against.
type feedSpool struct {
	byURI, byTime extsort.Sorter
	sorted        bool
	n             int
}

func newFeedSpool(dir string) *feedSpool {
	return &feedSpool{
		byURI:  extsort.Sorter{Dir: dir, Pattern: "feed-uri-*", Dedupe: true},
		byTime: extsort.Sorter{Dir: dir, Pattern: "feed-time-*"},
	}
}

var errFeedSpool = errors.New("a feed's changes are read in one pass")

func (s *feedSpool) add(en *rs.Entry) error {
	if s.sorted {
		return errFeedSpool
	}
	v, err := json.Marshal(en)
	if err != nil {
		return fmt.Errorf("change to %s: %w", en.Loc, err)
	}
	k := timeKey(en.EventTime(), "")
	for i := range k {
		k[i] = ^k[i] // the newest first
	}
	return s.byURI.Add([]byte(en.Loc), k, v)
}

// flush ends the adding: the second sort is made from the first.
func (s *feedSpool) flush() error {
	if s.sorted {
		return nil
	}
	s.sorted = true
	err := s.byURI.Each(func(uri, inv, v []byte) error {
		k := make([]byte, 12, 12+len(uri))
		for i := range inv {
			k[i] = ^inv[i]
		}
		s.n++
		return s.byTime.Add(append(k, uri...), nil, v)
	})
	s.byURI.Close()
	return err
}

func (s *feedSpool) each(fn func(*rs.Entry) error) error {
	return s.byTime.Each(func(k, _, v []byte) error {
		en := new(rs.Entry)
		if err := json.Unmarshal(v, en); err != nil {
			return fmt.Errorf("%w: spooled change to %s: %v", ErrState, k[12:], err)
		}
		return fn(en)
	})
}

func (s *feedSpool) len() int { return s.n }

func (s *feedSpool) close() {
	s.byURI.Close()
	s.byTime.Close()
}

func (s *feedSpool) get(string) (*rs.Entry, error) { return nil, errFeedSpool }
func (s *feedSpool) remove(string) error           { return errFeedSpool }
