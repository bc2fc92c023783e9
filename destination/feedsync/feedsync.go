package feedsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/feedsync/iiif"
	"github.com/resourcesync-go/resourcesync/feed/activity"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/rs"
)

// Change is what the feed says of one object.
type Change struct {
	URI    string
	Change rs.Change // rs.Created, rs.Updated or rs.Deleted
	Time   time.Time // zero when the feed gives none (Level 0)
	Length int64     // -1 when unknown
	Type   string    // media type, "" when unknown
	Hashes rs.Hashes // nil when none (or malformed: a digest is a hint)
	// Triples, for an LDES member, are its statements (with the blank
	// nodes they reach): what a graph store keeps of the version.
	Triples []rdf.Triple
	// Member, for an LDES member, is its IRI (a version's own name).
	Member string
}

// Entry is c as a Change List entry.
func (c Change) Entry() *rs.Entry {
	en := &rs.Entry{Loc: c.URI}
	en.MD.Change = c.Change
	if !c.Time.IsZero() {
		en.MD.DateTime = rs.NewTime(c.Time)
	}
	if c.Change != rs.Deleted {
		if c.Length >= 0 {
			en.MD.Length, en.MD.HasLength = c.Length, true
		}
		en.MD.Type = c.Type
		en.MD.Hashes = c.Hashes
	}
	return en
}

// Fetched is one downloaded feed document; the caller closes it.
type Fetched struct {
	io.ReadCloser
	// URL is where the document was found, after redirects.
	URL    string
	Header http.Header
}

// Getter fetches one feed document. It is the mirror's document Getter:
// size limits, retries, credentials and the origin policy are applied
// there.
type Getter func(ctx context.Context, u string) (Fetched, error)

// Options bounds and observes a walk.
type Options struct {
	// Since is the previous run's position: activities before it are
	// done (zero: a first run); those dated Since itself are read again. A mirror that failed to apply a change
	// passes a time just before it.
	Since time.Time
	// Now is the clock (default time.Now); times after Now+Skew are
	// clamped to Now.
	Now  func() time.Time
	Skew time.Duration
	// MaxPages caps the pages one walk reads (default DefaultMaxPages).
	MaxPages int
	// Warn receives what the walk tolerated (a future date); may be nil.
	Warn func(msg string)
	// Resume, for an LDES, are the nodes to start from instead of the
	// stream: the Frontier of the previous walk.
	Resume []string
}

// DefaultMaxPages is the pages one walk reads at most: 1,000,000
// activities at the page size of 100 that publishers commonly use, times ten.
const DefaultMaxPages = 100000

// DefaultSkew is how far in the future a time may be before it is
// clamped: clocks of publishers and consumers differ by seconds.
const DefaultSkew = 5 * time.Minute

// Result tells what a walk read.
type Result struct {
	// Until is the newest activity time read (clamped to the clock),
	// or Since when nothing newer was read: the next walk's Since.
	Until time.Time
	Pages int
	Items int
	// Refresh is the time of the newest Refresh read, zero when none.
	Refresh time.Time
	// Clamped counts activities dated in the future.
	Clamped int
	// Frontier, for an LDES, are the nodes read that may still change
	// (not served as immutable): every later member is in them or in
	// nodes they will lead to. nil when the next walk must start from the
	// stream.
	Frontier []string
}

// ErrLoop is returned when prev leads back to a page already read.
var ErrLoop = errors.New("prev leads back to a page already read")

// ErrTooManyPages is returned when a walk would read more than MaxPages.
var ErrTooManyPages = errors.New("more pages than the limit")

// Walk reads the IIIF Change Discovery stream at start (its collection,
// or a page of it) newest first, and gives sink every change after
// opt.Since, newest first. A change of an object given once already is
// given again (the sink keeps the newest, as a Change List's reader
// does); Move gives the deletion of its object and the creation of its
// target. Errors name the page.
func Walk(ctx context.Context, get Getter, start string, opt Options, sink func(Change) error) (Result, error) {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.MaxPages <= 0 {
		opt.MaxPages = DefaultMaxPages
	}
	if opt.Skew == 0 {
		opt.Skew = DefaultSkew
	}
	w := &walker{get: get, opt: opt, sink: sink, seen: map[string]bool{}, res: Result{Until: opt.Since}}
	now := opt.Now()
	w.now, w.latest = now, now.Add(opt.Skew)
	d, final, err := w.fetch(ctx, start)
	if err != nil {
		return w.res, err
	}
	stream := final
	if d.Kind == iiif.KindCollection {
		if d.ID != "" {
			stream = d.ID
		}
		last := resolve(final, d.Last)
		if last == "" {
			return w.res, fmt.Errorf("%s: last %q is not a URL", final, d.Last)
		}
		if d, final, err = w.fetch(ctx, last); err != nil {
			return w.res, err
		}
		if d.Kind != iiif.KindPage {
			return w.res, fmt.Errorf("%s: last of %s is not an OrderedCollectionPage", final, start)
		}
	} else if d.PartOf != "" {
		stream = resolve(final, d.PartOf)
	}
	w.stream = stream
	for {
		done, err := w.page(d, final)
		if err != nil || done || d.Prev == "" {
			return w.res, err
		}
		prev := resolve(final, d.Prev)
		if prev == "" {
			return w.res, fmt.Errorf("%s: prev %q is not a URL", final, d.Prev)
		}
		if d, final, err = w.fetch(ctx, prev); err != nil {
			return w.res, err
		}
		if d.Kind != iiif.KindPage {
			return w.res, fmt.Errorf("%s: prev leads to a %s, not an OrderedCollectionPage", final, d.Kind)
		}
	}
}

type walker struct {
	get         Getter
	opt         Options
	sink        func(Change) error
	seen        map[string]bool // pages read: bounded by MaxPages
	stream      string
	now, latest time.Time
	onlyDelete  bool
	res         Result
}

func (w *walker) fetch(ctx context.Context, u string) (*iiif.Doc, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, u, err
	}
	if w.seen[u] {
		return nil, u, fmt.Errorf("%s: %w", u, ErrLoop)
	}
	if w.res.Pages >= w.opt.MaxPages {
		return nil, u, fmt.Errorf("%s: %w (%d)", u, ErrTooManyPages, w.opt.MaxPages)
	}
	w.seen[u] = true
	fd, err := w.get(ctx, u)
	if err != nil {
		return nil, u, err
	}
	defer fd.Close()
	final := fd.URL
	if final == "" {
		final = u
	}
	if final != u {
		if w.seen[final] {
			return nil, final, fmt.Errorf("%s: %w", final, ErrLoop)
		}
		w.seen[final] = true
	}
	d, err := iiif.Decode(fd, final)
	if err != nil {
		return nil, final, err
	}
	w.res.Pages++
	return d, final, nil
}

// page applies the page algorithm to d's items, newest first; done tells
// that an activity before Since ended the walk.
func (w *walker) page(d *iiif.Doc, u string) (done bool, err error) {
	since := w.opt.Since
	for i := len(d.Items) - 1; i >= 0; i-- {
		it := &d.Items[i]
		t := it.Time()
		if t.After(w.latest) {
			w.res.Clamped++
			if w.res.Clamped == 1 && w.opt.Warn != nil {
				w.opt.Warn(fmt.Sprintf("%s: activity %d is dated %s, in the future: taken as now (further ones not reported)", u, i, t.UTC().Format(time.RFC3339)))
			}
			t = w.now
		}
		if !t.IsZero() && !since.IsZero() && t.Before(since) {
			// Read by the run that reached since. One dated since itself
			// is read again: feeds date to the second, and an activity of
			// that second may have been published after that run (§3.5
			// stops at activities before the last crawl).
			return true, nil
		}
		w.res.Items++
		if t.After(w.res.Until) {
			w.res.Until = t
		}
		if it.Type == activity.Refresh {
			if t.After(w.res.Refresh) {
				w.res.Refresh = t
			}
			if since.IsZero() {
				return true, nil // a first run has seen everything after it
			}
			w.onlyDelete = true
			continue
		}
		if err := w.item(it, t, u, i); err != nil {
			return false, err
		}
	}
	return false, nil
}

func (w *walker) item(it *iiif.Item, t time.Time, u string, i int) error {
	obj := ""
	if it.Object != nil {
		obj = resolve(u, it.Object.ID)
	}
	switch it.Type {
	case activity.Delete:
	case activity.Remove:
		if it.Origin != nil && resolve(u, it.Origin.ID) != w.stream {
			return nil
		}
	case activity.Move:
		if obj != "" {
			if err := w.sink(Change{URI: obj, Change: rs.Deleted, Time: t, Length: -1}); err != nil {
				return err
			}
		}
		if w.onlyDelete || it.Target == nil {
			return nil
		}
		if tgt := resolve(u, it.Target.ID); tgt != "" {
			return w.sink(change(it.Target, tgt, rs.Created, t))
		}
		return nil
	case activity.Create, activity.Update, activity.Add:
		if w.onlyDelete {
			return nil
		}
		if it.Type == activity.Add && it.Target != nil && resolve(u, it.Target.ID) != w.stream {
			return nil
		}
	default:
		return nil // unknown types are ignored (§3)
	}
	if obj == "" {
		return fmt.Errorf("%s: activity %d (%s) names no object", u, i, it.Type)
	}
	kind := rs.Updated
	switch it.Type {
	case activity.Delete, activity.Remove:
		kind = rs.Deleted
	case activity.Create, activity.Add:
		kind = rs.Created
	}
	return w.sink(change(it.Object, obj, kind, t))
}

func change(r *activity.Ref, uri string, kind rs.Change, t time.Time) Change {
	c := Change{URI: uri, Change: kind, Time: t, Length: -1, Type: r.Format}
	if r.Size != nil && *r.Size >= 0 {
		c.Length = *r.Size
	}
	if r.Digest != "" {
		if h, err := rs.ParseHashes(r.Digest); err == nil {
			c.Hashes = h
		}
	}
	return c
}

// resolve makes ref absolute against base; "" when it is not an http(s)
// URL.
func resolve(base, ref string) string {
	if ref == "" {
		return ""
	}
	bu, err := url.Parse(base)
	if err != nil {
		return ""
	}
	ru, err := bu.Parse(ref)
	if err != nil || (ru.Scheme != "http" && ru.Scheme != "https") || ru.Host == "" {
		return ""
	}
	ru.Fragment = ""
	return ru.String()
}
