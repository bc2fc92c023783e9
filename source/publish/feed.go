package publish

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/resourcesync-go/resourcesync/feed"
	"github.com/resourcesync-go/resourcesync/feed/activity"
	"github.com/resourcesync-go/resourcesync/rs"
)

// metaFeed is the meta key of a set's feed state (feedState).
const metaFeed = "publish.feed"

// FeedDir is the directory of a set's change feeds relative to Out: the
// IIIF Change Discovery collection (feed.CollectionFile) and the LDES
// (feed.StreamFile) with their pages (see package feed).
func FeedDir(set string) string { return setDoc(set, "feed/") }

// feedState is what the meta keeps of a set's feed: the stream's
// baseline (decided once) and how many pages are final on disk.
type feedState struct {
	BaseURL   string    `json:"base_url"`
	PageSize  int       `json:"page_size"`
	BaseSeq   uint64    `json:"base_seq"`
	BaseItems int64     `json:"base_items"`
	BaseTime  time.Time `json:"base_time"`
	// Final pages 0 … Final-1 are written, with their next links, and
	// never change; page Final is the last one written.
	Final int64 `json:"final"`
	// Last is the journal's last seq the last page was written with.
	Last uint64 `json:"last"`
	// FinalSeg: LDES segments 0 … FinalSeg-1 are written and never change.
	FinalSeg int64 `json:"final_seg"`
}

func (f *feedState) stream() feed.Stream {
	return feed.Stream{BaseURL: f.BaseURL, PageSize: f.PageSize, BaseSeq: f.BaseSeq, BaseItems: f.BaseItems, BaseTime: f.BaseTime}
}

// feeds writes the set's change feeds: the baseline pages once (the first
// time, or when the settings changed or the tree lost them), then the
// journal pages that became full since the last run (once each), the last
// page, the collection and the stream document. A run's cost follows the
// journal records since the previous run. Files are written before the
// meta that describes them, so a killed run is redone by the next one.
func (p *publisher) feeds(ctx context.Context, s *Set) error {
	dir := FeedDir(s.Name)
	base := p.url(dir)
	var fs feedState
	ok, err := getMeta(ctx, s.Store, metaFeed, &fs)
	if err != nil {
		return err
	}
	if ok && (fs.BaseURL != base || fs.PageSize != p.cfg.FeedPageSize || !exists(p.file(dir+feed.PageFile(0))) ||
		!exists(p.file(dir+feed.PageFile(fs.Final)))) {
		p.log.Info("publish: feeds begin again (settings changed or pages missing)", "set", s.Name)
		ok = false
	}
	ss, err := s.Store.Stats(ctx)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	last := ss.LastSeq
	if !ok {
		// A stream that begins again leaves nothing of the previous one
		// (or of a killed first attempt): a stale page N+1 would make
		// page N look final.
		if err := os.RemoveAll(p.file(dir)); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		st := feed.Stream{BaseURL: base, PageSize: p.cfg.FeedPageSize}
		st, err = feed.Baseline(ctx, s.Store, st, s.loc, func(st *feed.Stream, n int64, items []feed.Item) error {
			return p.writeFeedPage(dir, st, n, items, st.BaseSeq)
		})
		if err != nil {
			return err
		}
		if err := syncFS(p.cfg.Out); err != nil {
			return err
		}
		fs = feedState{BaseURL: base, PageSize: p.cfg.FeedPageSize, BaseSeq: st.BaseSeq, BaseItems: st.BaseItems,
			BaseTime: st.BaseTime, Final: st.BasePages() - 1, Last: ^uint64(0)} // the collection and index are not written yet
		if err := putMeta(ctx, s.Store, metaFeed, fs); err != nil {
			return err
		}
	}
	if last < fs.BaseSeq {
		last = fs.BaseSeq
	}
	st := fs.stream()
	pages := st.Pages(last)
	if fs.Last == last && exists(p.file(dir+feed.PageFile(pages-1))) {
		return nil
	}
	var buf []feed.Item
	for n := fs.Final; n < pages; n++ {
		if n < st.BasePages() {
			// The last baseline page gains its next links; it cannot be
			// rendered again (the inventory moved on).
			if n < pages-1 {
				if err := p.linkBaseline(dir, &st, n); err != nil {
					return err
				}
			}
			continue
		}
		buf, err = st.JournalPage(ctx, s.Store, n, s.loc, buf)
		if err != nil {
			return fmt.Errorf("publish: set %s: %w", s.Name, err)
		}
		if err := p.writeFeedPage(dir, &st, n, buf, last); err != nil {
			return err
		}
	}
	finalSeg, err := p.feedIndex(ctx, s, dir, &st, fs.FinalSeg, pages)
	if err != nil {
		return err
	}
	if err := writeAtomicLater(p.file(dir+feed.CollectionFile), func(w io.Writer) error { return st.WriteCollection(w, last) }); err != nil {
		return err
	}
	if err := writeAtomicLater(p.file(dir+feed.StreamFile), st.WriteStream); err != nil {
		return err
	}
	if err := syncFS(p.cfg.Out); err != nil {
		return err
	}
	fs.Final, fs.Last, fs.FinalSeg = pages-1, last, finalSeg
	if err := putMeta(ctx, s.Store, metaFeed, fs); err != nil {
		return err
	}
	return nil
}

// linkBaseline adds to the last baseline page n its links to page n+1
// (feed.Stream.AddNext). A killed run may have done it already: a page
// that has its link is left as it is.
func (p *publisher) linkBaseline(dir string, st *feed.Stream, n int64) error {
	page, err := os.ReadFile(p.file(dir + feed.PageFile(n)))
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	node, err := os.ReadFile(p.file(dir + feed.NodeFile(n)))
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	page2, node2, err := st.AddNext(page, node, n, st.BaseTime)
	if errors.Is(err, feed.ErrNotOurs) && bytes.Contains(page, []byte(`"next":`)) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("publish: page %d: %w", n, err)
	}
	if err := writeAtomicLater(p.file(dir+feed.PageFile(n)), func(w io.Writer) error { _, err := w.Write(page2); return err }); err != nil {
		return err
	}
	return writeAtomicLater(p.file(dir+feed.NodeFile(n)), func(w io.Writer) error { _, err := w.Write(node2); return err })
}

// writeFeedPage writes page n in its two files: Change Discovery JSON and
// LDES Turtle (the server derives JSON-LD and N-Triples from it).
func (p *publisher) writeFeedPage(dir string, st *feed.Stream, n int64, items []feed.Item, last uint64) error {
	if err := writeAtomicLater(p.file(dir+feed.PageFile(n)), func(w io.Writer) error { return st.WritePage(w, n, items, last) }); err != nil {
		return err
	}
	return writeAtomicLater(p.file(dir+feed.NodeFile(n)), func(w io.Writer) error { return st.WriteNode(w, n, items, last) })
}

// feedLinks returns the links to a set's feeds: rs:ln rel="alternate"
// with the feeds' media types, which ResourceSync clients skip (py-resync
// keeps an unknown rel and does nothing with it).
func (p *publisher) feedLinks(set string) []rs.Link {
	if !p.cfg.Feeds {
		return nil
	}
	dir := p.url(FeedDir(set))
	return []rs.Link{
		// The type without its parameter: ResourceSync's schema allows
		// none in rs:ln's type (clients that validate would refuse the
		// document); the 1.1 schema's profile attribute carries it.
		{Rel: "alternate", Type: "application/ld+json", Profile: activity.Profile, Href: dir + feed.CollectionFile},
		{Rel: "alternate", Type: feed.Turtle, Href: dir + feed.StreamFile},
	}
}

// feedIndex writes the LDES segments from segment from on (each links
// its pages; the ones written before are final) and the view linking
// every segment, and returns the number of leading final segments. It
// reads one journal record per page of the segments it writes and per
// segment: bounded by the segment size and the number of segments, not
// by the journal.
func (p *publisher) feedIndex(ctx context.Context, s *Set, dir string, st *feed.Stream, from, pages int64) (int64, error) {
	per := st.Segment()
	segs := (pages-1)/per + 1
	final := from
	for k := from; k < segs; k++ {
		var bounds []feed.Bound
		for n := k * per; n < min((k+1)*per, pages); n++ {
			t, err := st.FirstTime(ctx, s.Store, n)
			if err != nil {
				return 0, err
			}
			bounds = append(bounds, feed.Bound{URL: st.NodeURL(n), From: t})
		}
		if err := writeAtomicLater(p.file(dir+feed.SegmentFile(k)), func(w io.Writer) error { return st.WriteSegment(w, k, bounds) }); err != nil {
			return 0, err
		}
		if (k+1)*per <= pages-1 {
			final = k + 1
		}
	}
	var view []feed.Bound
	for k := range segs {
		t, err := st.FirstTime(ctx, s.Store, k*per)
		if err != nil {
			return 0, err
		}
		view = append(view, feed.Bound{URL: st.SegmentURL(k), From: t})
	}
	if err := writeAtomicLater(p.file(dir+feed.ViewFile), func(w io.Writer) error { return st.WriteView(w, view) }); err != nil {
		return 0, err
	}
	return final, nil
}
