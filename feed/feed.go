package feed

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/feed/activity"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// DefaultPageSize is the number of items per page when Stream.PageSize is
// 0: a page of 1,000 activities is about 300 KB of JSON.
const DefaultPageSize = 1000

// File names of the documents, relative to Stream.BaseURL (and to the
// directory they are written in). The LDES documents' IRIs are their
// Turtle files' URLs, so that a static web server serves the stream; a
// server that negotiates gives the JSON-LD of the same IRI (ToJSONLD) to
// a client asking for it.
const (
	CollectionFile = "collection.json"
	StreamFile     = "ldes.ttl"
)

// ViewFile is the LDES view's file name (the root node), and
// DefaultSegmentSize the number of pages a segment node links.
const (
	ViewFile           = "view.ttl"
	DefaultSegmentSize = 100
)

// SegmentFile is the file name of LDES segment node k: the node linking
// pages k·SegmentSize … (k+1)·SegmentSize-1.
func SegmentFile(k int64) string { return "seg-" + strconv.FormatInt(k, 10) + ".ttl" }

// PageFile is the file name of Change Discovery page n.
func PageFile(n int64) string { return "page-" + strconv.FormatInt(n, 10) + ".json" }

// NodeFile is the file name of LDES node n (its Turtle representation).
func NodeFile(n int64) string { return "ldes-" + strconv.FormatInt(n, 10) + ".ttl" }

// Media types of the LDES representations.
const (
	Turtle = "text/turtle"
	JSONLD = "application/ld+json"
)

// Stream describes one set's feed: where it is, how it is paged and
// where its baseline ends. The baseline fields are decided once, when the
// stream begins (Baseline), and must be kept with the pages.
type Stream struct {
	// BaseURL is the URL of the directory of the feed's documents,
	// ending with "/".
	BaseURL string
	// PageSize is the number of items per page; DefaultPageSize if 0.
	PageSize int
	// SegmentSize is the number of pages an LDES segment node links;
	// DefaultSegmentSize if 0.
	SegmentSize int
	// BaseSeq is the journal's last seq when the stream began: journal
	// pages hold the records after it.
	BaseSeq uint64
	// BaseItems is the number of baseline items (the Refresh and one
	// Create per resource), at least 1.
	BaseItems int64
	// BaseTime is the endTime of the baseline's activities: the datetime
	// of the journal record BaseSeq, or the collection's baseline time.
	BaseTime time.Time
}

func (s *Stream) size() int64 {
	if s.PageSize <= 0 {
		return DefaultPageSize
	}
	return int64(s.PageSize)
}

// Segment returns the number of pages per segment.
func (s *Stream) Segment() int64 {
	if s.SegmentSize <= 0 {
		return DefaultSegmentSize
	}
	return int64(s.SegmentSize)
}

// FirstTime returns the least time of page n's items: the baseline's
// time, the time of the page's first journal record, or, for a page
// still empty, the journal's last time (later items are not earlier).
func (s *Stream) FirstTime(ctx context.Context, st store.Store, n int64) (time.Time, error) {
	if n < s.BasePages() {
		return s.BaseTime, nil
	}
	from, _ := s.SeqRange(n)
	for c, err := range st.Journal(ctx, from) {
		if err != nil {
			return time.Time{}, fmt.Errorf("feed: %w", err)
		}
		return c.Time.UTC(), nil
	}
	ss, err := st.Stats(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("feed: %w", err)
	}
	if ss.LastTime.After(s.BaseTime) {
		return ss.LastTime.UTC(), nil
	}
	return s.BaseTime, nil
}

// BasePages is the number of baseline pages.
func (s *Stream) BasePages() int64 {
	n := s.BaseItems
	if n < 1 {
		n = 1
	}
	return (n + s.size() - 1) / s.size()
}

// Pages returns the number of pages when the journal's last seq is last:
// the baseline pages and the journal pages that hold a record (Change
// Discovery 1.0 wants at least one item a page). Every page but the last
// links the next one.
func (s *Stream) Pages(last uint64) int64 {
	var j uint64
	if last > s.BaseSeq {
		j = last - s.BaseSeq
	}
	return s.BasePages() + int64((j+uint64(s.size())-1)/uint64(s.size()))
}

// Total returns the number of items of the stream when the journal's last
// seq is last.
func (s *Stream) Total(last uint64) int64 {
	t := s.BaseItems
	if last > s.BaseSeq {
		t += int64(last - s.BaseSeq)
	}
	return t
}

// startIndex returns the index in the stream of page n's first item.
func (s *Stream) startIndex(n int64) int64 {
	bp := s.BasePages()
	if n < bp {
		return n * s.size()
	}
	return s.BaseItems + (n-bp)*s.size()
}

// SeqRange returns the journal seqs [from, to] of journal page n (n at
// least BasePages).
func (s *Stream) SeqRange(n int64) (from, to uint64) {
	j := uint64(n - s.BasePages())
	from = s.BaseSeq + 1 + j*uint64(s.size())
	return from, from + uint64(s.size()) - 1
}

// Item is one entry of a page: one activity, one LDES member.
type Item struct {
	// Key names the item within the stream: "s" and the journal seq, or
	// "b" and the baseline index. It is the fragment of the activity's id
	// and of the member's version IRI.
	Key  string
	Type string // activity.Create, Update, Delete or Refresh
	// Object is the resource's URL (empty for a Refresh).
	Object string
	Time   time.Time
	// The resource after the change (before it, for a Delete): what the
	// LDES member and the activity's object describe.
	Size      int64
	MediaType string
	MD5       [16]byte
	SHA256    [32]byte
}

// digest is the ResourceSync spelling of the item's hashes.
func (it *Item) digest() string {
	return "md5:" + hex.EncodeToString(it.MD5[:]) + " sha-256:" + hex.EncodeToString(it.SHA256[:])
}

// hasBytes reports whether the item describes bytes (a Create or Update).
func (it *Item) hasBytes() bool { return it.Type == activity.Create || it.Type == activity.Update }

// ObjectType is the Activity Streams type of a resource of media type mt:
// Image, Video, Audio, Page (HTML) or Document.
func ObjectType(mt string) string {
	mt = strings.ToLower(mt)
	switch {
	case strings.HasPrefix(mt, "image/"):
		return "Image"
	case strings.HasPrefix(mt, "video/"):
		return "Video"
	case strings.HasPrefix(mt, "audio/"):
		return "Audio"
	case strings.HasPrefix(mt, "text/html"), strings.HasPrefix(mt, "application/xhtml+xml"):
		return "Page"
	}
	return "Document"
}

// FromChange returns the item of journal record c; loc maps a resource's
// path to its URL.
func FromChange(c *store.Change, loc func(string) string) Item {
	return Item{
		Key: "s" + strconv.FormatUint(c.Seq, 10), Type: activity.FromChange(c.Kind),
		Object: loc(c.Resource.Path), Time: c.Time.UTC(),
		Size: c.Resource.Size, MediaType: c.Resource.Type, MD5: c.Resource.MD5, SHA256: c.Resource.SHA256,
	}
}

// ErrJournalGap is returned when a journal page's records are not all in
// the journal (a journal that no longer reaches back to them).
var ErrJournalGap = errors.New("feed: journal does not hold the page's records")

// JournalPage reads the items of journal page n from st, oldest first:
// at most PageSize records, fewer for the last page. It reads only the
// page's seq range.
func (s *Stream) JournalPage(ctx context.Context, st store.Store, n int64, loc func(string) string, buf []Item) ([]Item, error) {
	from, to := s.SeqRange(n)
	items := buf[:0]
	want := from
	for c, err := range st.Journal(ctx, from) {
		if err != nil {
			return nil, fmt.Errorf("feed: %w", err)
		}
		if c.Seq > to {
			break
		}
		if c.Seq != want {
			return nil, fmt.Errorf("%w: seq %d where %d was expected", ErrJournalGap, c.Seq, want)
		}
		want++
		items = append(items, FromChange(&c, loc))
		if c.Seq == to {
			break
		}
	}
	return items, nil
}

// Baseline begins a stream: it reads the journal's last seq and then every
// resource of st's inventory, and calls emit with each baseline page, in
// order (page 0 starts with the Refresh), and the stream as far as it is
// known, enough to render that page (WritePage, WriteNode with the
// stream's BaseSeq as last). Memory holds one page; the inventory is read
// in pages (store.ResourcesIn), no transaction held while emit writes. The
// returned Stream (with BaseURL and PageSize as given) is to be kept with
// the pages. A resource created after the seq was read may be in the
// inventory too: its journal record follows in a journal page, which a
// consumer applies after the baseline's Create.
func Baseline(ctx context.Context, st store.Store, s Stream, loc func(string) string, emit func(s *Stream, n int64, items []Item) error) (Stream, error) {
	ss, err := st.Stats(ctx)
	if err != nil {
		return s, fmt.Errorf("feed: %w", err)
	}
	s.BaseSeq = ss.LastSeq
	s.BaseTime = ss.LastTime.UTC()
	if ss.LastSeq == 0 {
		if t, ok, err := store.BaselineTime(ctx, st); err != nil {
			return s, fmt.Errorf("feed: %w", err)
		} else if ok {
			s.BaseTime = t
		} else {
			s.BaseTime = time.Now().UTC()
		}
	}
	size := int(s.size())
	items := make([]Item, 0, size)
	items = append(items, Item{Key: "b0", Type: activity.Refresh, Time: s.BaseTime})
	var n, count int64 = 0, 1
	// A page is emitted once the next item exists, so the last baseline
	// page is known to be the last when it is written.
	for r, err := range st.ResourcesIn(ctx, "", "") {
		if err != nil {
			return s, fmt.Errorf("feed: %w", err)
		}
		if len(items) == size {
			s.BaseItems = count + 1 // more to come: page n is not the last
			if err := emit(&s, n, items); err != nil {
				return s, err
			}
			n++
			items = items[:0]
		}
		items = append(items, Item{Key: "b" + strconv.FormatInt(count, 10), Type: activity.Create,
			Object: loc(r.Path), Time: s.BaseTime,
			Size: r.Size, MediaType: r.Type, MD5: r.MD5, SHA256: r.SHA256})
		count++
	}
	s.BaseItems = count
	if err := emit(&s, n, items); err != nil {
		return s, err
	}
	return s, nil
}

// activityOf returns the Change Discovery activity of it on page n: no
// id (the spec's MAY; a page is what is published), the object's id and
// type, and its digest where the change left bytes (what a consumer can
// check a fetched object against; the LDES member has the length and
// media type too). Pages stay small: the baseline has one per resource.
func (s *Stream) activityOf(it *Item, n int64) activity.Activity {
	a := activity.Activity{Type: it.Type, EndTime: it.Time}
	if it.Object != "" {
		ref := &activity.Ref{ID: it.Object, Type: ObjectType(it.MediaType)}
		if it.hasBytes() {
			ref.Digest = it.digest()
		}
		a.Object = ref
	}
	return a
}
