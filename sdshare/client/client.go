package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/origin"
	"github.com/resourcesync-go/resourcesync/internal/redact"
	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/internal/watchdog"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare"
	"github.com/resourcesync-go/resourcesync/sdshare/atom"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// Defaults of a zero Config.
const (
	DefaultMaxWait          = 10 * time.Minute
	DefaultMaxFragmentBytes = 64 << 20
	DefaultMaxPages         = 1 << 20
	DefaultMaxSkew          = 5 * time.Minute
	// A feed page, the feed documents of one run, and a URL (without its
	// fragment): a hostile server cannot make the client hold or fetch
	// more (issue 24, item 2).
	DefaultMaxFeedBytes    = atom.DefaultMaxBytes
	DefaultMaxRunFeedBytes = 4 << 30
	DefaultMaxURLBytes     = 64 << 10
)

// ErrDiscovery: the overview feed or a collection feed could not be read,
// or does not lead to the feeds SDShare requires.
var ErrDiscovery = errors.New("sdshare client: discovery failed")

// RetryPolicy says how often and after how long a failed request is tried
// again; zero fields take the defaults of every client here (4 retries,
// backoff from 100ms to 10s with jitter, Retry-After honoured up to 60s).
type RetryPolicy struct {
	// Retries is the number of further attempts after the first
	// (0: the default; negative: none).
	Retries int
	// BaseDelay is the backoff before the first retry, doubled for each
	// further one up to MaxDelay.
	BaseDelay, MaxDelay time.Duration
	// MaxRetryAfter caps the wait a Retry-After header (or a 202's) can
	// ask for.
	MaxRetryAfter time.Duration
}

func (p RetryPolicy) policy() retry.Policy {
	return retry.Policy{Retries: p.Retries, BaseDelay: p.BaseDelay, MaxDelay: p.MaxDelay, MaxRetryAfter: p.MaxRetryAfter}
}

// Config says what to keep in step with what.
type Config struct {
	// Overview is the URL of the server's overview feed.
	Overview string
	// Store receives the collections' graphs.
	Store graphstore.Store
	// State holds t per collection.
	State *State
	// HTTPClient does the GETs (http.DefaultClient if nil).
	HTTPClient *http.Client
	// Retry is the policy for failed requests (the zero value: the
	// project's defaults).
	Retry RetryPolicy
	// MaxWait bounds the total wait on 202 Accepted for one document
	// (default DefaultMaxWait): a deadline from the first 202, retries
	// included; beyond it the document fails with ErrNotReady.
	MaxWait time.Duration
	// StallTimeout abandons a request (retried) whose headers, or any
	// next byte of its body, do not arrive within it (0: no limit), with
	// an error matching ErrStalled. Every GET: feeds, snapshots, chunks,
	// fragments.
	StallTimeout time.Duration
	// MinRate abandons a body (retried) averaging fewer bytes per second
	// over MinRateWindow (0: no limit), with an error matching ErrTooSlow.
	MinRate       float64
	MinRateWindow time.Duration
	// MaxSkew is how far past now an entry's updated may lie before it is
	// taken as the clock of a broken or hostile server (default
	// DefaultMaxSkew).
	MaxSkew time.Duration
	// MaxSnapshotBytes bounds a snapshot, its chunks together, after
	// decoding (default DefaultMaxSnapshotBytes); beyond it the snapshot
	// fails with ErrTooLarge and the graph is left as it was.
	MaxSnapshotBytes int64
	// MaxFragmentBytes bounds a fragment document (default
	// DefaultMaxFragmentBytes), and fragmentMemoryFactor times it the
	// memory of its statements (sdshare.TripleMemory each: a fragment is
	// held whole, and Turtle holds a statement in 2 bytes), beyond which
	// the fragment fails with ErrTooLarge: at the default, 64 MiB of
	// N-Triples averaging 125 bytes a statement or more.
	MaxFragmentBytes int64
	// MaxPages bounds the pages followed in one fragments feed or chunked
	// snapshot feed (default DefaultMaxPages): ErrTooManyPages beyond.
	MaxPages int
	// MaxFeedBytes bounds one feed document (default DefaultMaxFeedBytes;
	// ErrTooLarge), MaxRunFeedBytes the feed documents one Sync reads
	// (default DefaultMaxRunFeedBytes; ErrRunFeedBytes), and MaxURLBytes
	// the URL of any request, its fragment not counted (default
	// DefaultMaxURLBytes; ErrURLTooLong).
	MaxFeedBytes    int64
	MaxRunFeedBytes int64
	MaxURLBytes     int
	// AllowHosts are the hosts (HOST or HOST:PORT) requests may reach
	// besides the overview feed's authority (scheme, host and port):
	// every other feed, snapshot, chunk, fragment or redirect is refused
	// with an error matching ErrOffOrigin, as sync's --allow-host.
	AllowHosts []string
	// Graph maps a collection to the IRI of its graph in Store; nil, or
	// an empty result, means the collection feed's URL.
	Graph func(Collection) string
	// Only, if set, limits the run to the collections it returns true for.
	Only func(Collection) bool
	// Events, if set, receives progress (called from Sync's goroutine).
	Events func(Event)
	// UserAgent is sent with every request.
	UserAgent string
	// NoBulk fetches every fragment by its own GET, even from a server
	// that offers the bulk fragment request of this toolkit's server (a
	// Link header on its fragments feed; bulk.go).
	NoBulk bool
	// Fetchers is how many fragments are fetched at once, from one page
	// or the next (default DefaultFetchers; 1: one after another).
	// Fragments fetched ahead of the store hold at most 32 MiB
	// (sdshare.TripleMemory a statement) besides these in flight and the
	// batch being applied.
	Fetchers int
}

// Collection is a collection found in the overview feed.
type Collection struct {
	Title          string
	CollectionFeed string
	SnapshotsFeed  string
	FragmentsFeed  string
}

// Event is a progress report.
type Event struct {
	Collection string    `json:"collection"` // title, or collection feed URL
	Kind       string    `json:"kind"`       // discovered, snapshot, page, fragment-failed, future-updated, done
	URL        string    `json:"url,omitempty"`
	Triples    int64     `json:"triples,omitempty"`
	Fragments  int       `json:"fragments,omitempty"`
	T          time.Time `json:"t,omitzero"`
	Err        string    `json:"error,omitempty"`
}

// Failure is one entry or step that could not be done.
type Failure struct {
	Resource string    `json:"resource,omitempty"`
	URL      string    `json:"url,omitempty"`
	Updated  time.Time `json:"updated,omitzero"`
	Err      string    `json:"error"`
	// Cause is the error Err tells (for errors.Is and errors.As).
	Cause error `json:"-"`
}

// CollectionReport says what a run did to one collection.
type CollectionReport struct {
	Collection
	Graph           string    `json:"graph"`
	SnapshotLoaded  bool      `json:"snapshotLoaded,omitempty"`
	SnapshotTriples int64     `json:"snapshotTriples,omitempty"`
	Pages           int       `json:"pages"`
	Applied         int       `json:"applied"`
	Bulk            int       `json:"bulk,omitempty"` // fragments that came in bulk requests (bulk.go), not GETs of their own
	Deleted         int       `json:"deleted"`
	OutOfOrder      int       `json:"outOfOrder,omitempty"`
	FutureUpdated   int       `json:"futureUpdated,omitempty"` // entries dated past the clamp (see clampTime)
	TBefore         time.Time `json:"tBefore,omitzero"`
	T               time.Time `json:"t,omitzero"`
	Failures        []Failure `json:"failures,omitempty"`
	// FailuresOmitted counts the failures past the first maxFailures of
	// the run, which the report does not keep.
	FailuresOmitted int    `json:"failuresOmitted,omitempty"`
	Err             string `json:"error,omitempty"`
	// Cause is the error Err tells (for errors.Is and errors.As).
	Cause error `json:"-"`
}

// maxFailures bounds the failures the Report of a run keeps, and
// maxFailureText each of their strings: a feed decides how many entries
// fail and what their ids and links say, so kept whole they grew with
// the pages followed.
const (
	maxFailures    = 1000
	maxFailureText = 1024
)

// failed records f in cr, shortened, or counts it past maxFailures in
// the run (a server can list many collections as well as many entries).
func (s *syncer) failed(cr *CollectionReport, f Failure) {
	if s.keptFailures >= maxFailures {
		cr.FailuresOmitted++
		return
	}
	s.keptFailures++
	f.Resource, f.URL, f.Err = shortenTo(f.Resource, maxFailureText), shortenTo(f.URL, maxFailureText), shortenTo(f.Err, maxFailureText)
	cr.Failures = append(cr.Failures, f)
}

// FailureCount is the number of failed entries and steps, those not kept
// included.
func (cr *CollectionReport) FailureCount() int { return len(cr.Failures) + cr.FailuresOmitted }

// Report is the outcome of one Sync.
type Report struct {
	Overview    string             `json:"overview"`
	Collections []CollectionReport `json:"collections"`
}

// OK reports whether every collection is in step (no failures).
func (r *Report) OK() bool {
	for _, c := range r.Collections {
		if c.Err != "" || c.FailureCount() > 0 {
			return false
		}
	}
	return true
}

// Failed returns the number of failures of the run.
func (r *Report) Failed() int {
	n := 0
	for _, c := range r.Collections {
		n += c.FailureCount()
		if c.Err != "" {
			n++
		}
	}
	return n
}

type syncer struct {
	cfg          Config
	f            *fetcher
	keptFailures int // in the Report (maxFailures)
	bulk         bulkState
}

// Sync brings every collection of the server up to date once. It returns
// an error wrapping ErrDiscovery when the overview feed cannot be used,
// or the state cannot be written; failures of single collections or
// entries are in the Report (Report.OK). Every error message, in the
// Report and its Events too, has the credentials of its URLs redacted
// (internal/redact), so that a program logging them leaks nothing;
// errors.Is and errors.As see through.
func Sync(ctx context.Context, cfg Config) (*Report, error) {
	rep, err := syncOnce(ctx, cfg)
	return rep, redact.Error(err)
}

func syncOnce(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Store == nil || cfg.State == nil {
		return nil, errors.New("sdshare client: Config needs Store and State")
	}
	rep := &Report{Overview: cfg.Overview}
	s, err := newSyncer(cfg)
	if err != nil {
		return rep, err
	}
	cols, err := s.discover(ctx)
	if err != nil {
		return rep, err
	}
	for _, c := range cols {
		if cfg.Only != nil && !cfg.Only(c) {
			continue
		}
		cr, err := s.collection(ctx, c)
		rep.Collections = append(rep.Collections, cr)
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// Follow runs Sync every interval until ctx ends, passing each run's
// report (or its error) to each. A failed run is retried at the next
// interval; Follow returns ctx's error.
func Follow(ctx context.Context, cfg Config, interval time.Duration, each func(*Report, error)) error {
	if interval <= 0 {
		interval = time.Minute
	}
	for {
		rep, err := Sync(ctx, cfg)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if each != nil {
			each(rep, err)
		}
		if err := retry.Sleep(ctx, interval); err != nil {
			return err
		}
	}
}

func newSyncer(cfg Config) (*syncer, error) {
	// One policy for every request, redirects included: the overview's
	// authority and the hosts allowed (internal/origin, as sync).
	pol, err := origin.New(cfg.Overview, cfg.AllowHosts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDiscovery, err)
	}
	hc := pol.Client(cfg.HTTPClient)
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	if cfg.MaxFragmentBytes <= 0 {
		cfg.MaxFragmentBytes = DefaultMaxFragmentBytes
	}
	if cfg.MaxSnapshotBytes <= 0 {
		cfg.MaxSnapshotBytes = DefaultMaxSnapshotBytes
	}
	if cfg.MaxPages <= 0 {
		cfg.MaxPages = DefaultMaxPages
	}
	if cfg.MaxSkew <= 0 {
		cfg.MaxSkew = DefaultMaxSkew
	}
	if cfg.MaxFeedBytes <= 0 {
		cfg.MaxFeedBytes = DefaultMaxFeedBytes
	}
	if cfg.MaxRunFeedBytes <= 0 {
		cfg.MaxRunFeedBytes = DefaultMaxRunFeedBytes
	}
	if cfg.MaxURLBytes <= 0 {
		cfg.MaxURLBytes = DefaultMaxURLBytes
	}
	if cfg.Fetchers <= 0 {
		cfg.Fetchers = DefaultFetchers
	}
	lim := watchdog.Limits{Idle: cfg.StallTimeout, MinRate: cfg.MinRate, Window: cfg.MinRateWindow}
	bulkHC := *hc
	bulkHC.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &syncer{cfg: cfg, f: &fetcher{hc: hc, bulkHC: &bulkHC, policy: cfg.Retry.policy(), maxWait: cfg.MaxWait, ua: cfg.UserAgent, limits: lim,
		origin: pol, maxFeed: cfg.MaxFeedBytes, maxRunFeed: cfg.MaxRunFeedBytes, maxURL: cfg.MaxURLBytes}}, nil
}

func (s *syncer) emit(e Event) {
	if s.cfg.Events != nil {
		e.Err = redact.String(e.Err)
		s.cfg.Events(e)
	}
}

// rels accepts a link relation in the 2012 namespace and in the legacy
// egovpt one ("…/sdshare/collectionfeed").
func hasRel(l atom.Link, rel string) bool {
	if l.Rel == rel {
		return true
	}
	name := strings.TrimPrefix(rel, sdshare.NS)
	return l.Rel == sdshare.LegacyNS+"/"+name
}

func linksRel(e atom.Entry, rel string) []atom.Link {
	var out []atom.Link
	for _, l := range e.Links {
		if hasRel(l, rel) {
			out = append(out, l)
		}
	}
	return out
}

// discover reads the overview feed and each collection feed (SD-CLI-2).
func (s *syncer) discover(ctx context.Context) ([]Collection, error) {
	ov, err := s.f.feed(ctx, s.cfg.Overview)
	if err != nil {
		return nil, fmt.Errorf("%w: overview feed: %w", ErrDiscovery, err)
	}
	var cols []Collection
	seen := map[string]bool{}
	for _, e := range ov.Entries {
		for _, l := range linksRel(e, sdshare.RelCollectionFeed) {
			if l.Href == "" || seen[l.Href] {
				continue
			}
			seen[l.Href] = true
			cols = append(cols, Collection{Title: e.Title, CollectionFeed: l.Href})
		}
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("%w: overview feed %s lists no collection (no link rel %s)", ErrDiscovery, s.cfg.Overview, sdshare.RelCollectionFeed)
	}
	return cols, nil
}

// subfeeds reads c's collection feed for its snapshots and fragments feeds.
func (s *syncer) subfeeds(ctx context.Context, c *Collection) error {
	cf, err := s.f.feed(ctx, c.CollectionFeed)
	if err != nil {
		return fmt.Errorf("%w: collection feed: %w", ErrDiscovery, err)
	}
	for _, e := range cf.Entries {
		if ls := linksRel(e, sdshare.RelSnapshotsFeed); len(ls) > 0 && c.SnapshotsFeed == "" {
			c.SnapshotsFeed = ls[0].Href
		}
		if ls := linksRel(e, sdshare.RelFragmentsFeed); len(ls) > 0 && c.FragmentsFeed == "" {
			c.FragmentsFeed = ls[0].Href
		}
	}
	if c.FragmentsFeed == "" {
		return fmt.Errorf("%w: collection feed %s has no fragments feed (link rel %s)", ErrDiscovery, c.CollectionFeed, sdshare.RelFragmentsFeed)
	}
	return nil
}

func (c Collection) name() string {
	if c.Title != "" {
		return c.Title
	}
	return c.CollectionFeed
}

// collection syncs one collection. Its error is one that ends the whole
// run (state not writable, ctx ended); everything else is in the report.
func (s *syncer) collection(ctx context.Context, c Collection) (CollectionReport, error) {
	cr := CollectionReport{Collection: c}
	fail := func(err error) (CollectionReport, error) {
		err = redact.Error(err)
		cr.Err, cr.Cause = err.Error(), err
		s.emit(Event{Collection: c.name(), Kind: "failed", Err: cr.Err})
		if ctx.Err() != nil {
			return cr, ctx.Err()
		}
		return cr, nil
	}
	if err := s.subfeeds(ctx, &c); err != nil {
		return fail(err)
	}
	cr.Collection = c
	graph := c.CollectionFeed
	if s.cfg.Graph != nil {
		if g := s.cfg.Graph(c); g != "" {
			graph = g
		}
	}
	cr.Graph = graph
	st, _, err := s.cfg.State.Get(c.CollectionFeed)
	if err != nil {
		return cr, err
	}
	if st.Graph != graph {
		// A new collection, or one now kept in another graph: t of the
		// old graph says nothing about the new one.
		st = CollectionState{}
	}
	st.Title, st.CollectionFeed, st.SnapshotsFeed, st.FragmentsFeed, st.Graph = c.Title, c.CollectionFeed, c.SnapshotsFeed, c.FragmentsFeed, graph
	cr.TBefore = st.T
	s.emit(Event{Collection: c.name(), Kind: "discovered", URL: c.CollectionFeed, T: st.T})

	if st.T.IsZero() && c.SnapshotsFeed != "" {
		updated, n, err := s.snapshot(ctx, c, graph)
		if err != nil {
			return fail(fmt.Errorf("snapshot: %w", err))
		}
		if !updated.IsZero() {
			st.T, st.Snapshot = updated, updated // SD-CLI-6
			if err := s.cfg.State.Put(c.CollectionFeed, st); err != nil {
				return cr, err
			}
			cr.SnapshotLoaded, cr.SnapshotTriples = true, n
			s.emit(Event{Collection: c.name(), Kind: "snapshot", Triples: n, T: updated})
		}
	}
	if err := s.fragments(ctx, c, graph, &st, &cr); err != nil {
		cr.T = st.T
		if errors.Is(err, errStateWrite) || ctx.Err() != nil {
			return cr, err
		}
		return fail(err)
	}
	cr.T = st.T
	if cr.FailureCount() == 0 {
		st.Synced = time.Now().UTC()
		if err := s.cfg.State.Put(c.CollectionFeed, st); err != nil {
			return cr, err
		}
	}
	s.emit(Event{Collection: c.name(), Kind: "done", Fragments: cr.Applied, T: st.T})
	return cr, nil
}

var errStateWrite = errors.New("sdshare client: state not written")

// snapshot loads the newest snapshot of c into graph (SD-CLI-3..5) and
// returns its updated instant and the number of triples loaded. A
// snapshots feed without entries returns a zero instant: there is nothing
// to load, and fragments are then read from the start.
func (s *syncer) snapshot(ctx context.Context, c Collection, graph string) (time.Time, int64, error) {
	sf, err := s.f.feed(ctx, c.SnapshotsFeed)
	if err != nil {
		return time.Time{}, 0, err
	}
	var newest *atom.Entry
	for i := range sf.Entries {
		e := &sf.Entries[i]
		if e.Updated.IsZero() {
			continue
		}
		if _, ok := pickLink(snapshotLinks(*e)); !ok && len(linksRel(*e, sdshare.RelChunkedSnapshot)) == 0 {
			continue
		}
		if newest == nil || e.Updated.After(newest.Updated) {
			newest = e
		}
	}
	if newest == nil {
		return time.Time{}, 0, nil
	}
	// A snapshot dated in the future would set t there, as a fragment
	// entry would (clampTime).
	updated, ok := s.clampTime(sf.Updated, newest.Updated)
	if !ok {
		s.emit(Event{Collection: c.name(), Kind: "future-updated", URL: c.SnapshotsFeed,
			Err: fmt.Sprintf("snapshot entry %q is dated %s, in the future: taken as %s", newest.ID, newest.Updated.Format(time.RFC3339), updated.Format(time.RFC3339))})
	}
	var parts func(yield func(part, error) bool)
	if ch := linksRel(*newest, sdshare.RelChunkedSnapshot); len(ch) > 0 { // SD-CLI-4
		parts = s.chunks(ctx, ch[0].Href)
	} else {
		l, ok := pickLink(snapshotLinks(*newest))
		if !ok {
			return time.Time{}, 0, fmt.Errorf("snapshot entry %q: no link in a format the client reads", newest.ID)
		}
		parts = func(yield func(part, error) bool) { yield(part{link: l}, nil) }
	}
	var n int64
	// A body that broke off in transit loads the whole snapshot again.
	_, err = retry.Do(ctx, s.f.policy, func() (bool, error) {
		n = 0
		err := s.cfg.Store.ReplaceGraph(ctx, graph, s.snapshotTriples(ctx, parts, &n))
		return errors.Is(err, errTransient), err
	}, nil)
	if err != nil {
		return time.Time{}, 0, err
	}
	return updated, n, nil
}

// snapshotLinks returns e's snapshot links; legacy feeds (Ontopia, Duke)
// link the data with rel alternate only.
func snapshotLinks(e atom.Entry) []atom.Link {
	if ls := linksRel(e, sdshare.RelSnapshot); len(ls) > 0 {
		return ls
	}
	return e.LinksRel("alternate")
}

// errTransient marks a snapshot body that broke off in transit: the whole
// snapshot is loaded again.
var errTransient = errors.New("transfer interrupted")

type part struct {
	link  atom.Link
	index int
}

// chunks yields the chunk links of a chunked snapshot feed, following its
// next pages.
func (s *syncer) chunks(ctx context.Context, feedURL string) func(yield func(part, error) bool) {
	return func(yield func(part, error) bool) {
		seen := pageSet{}
		i := 0
		for u := feedURL; u != ""; {
			u = withoutFragment(u)
			if err := seen.add(u, s.cfg.MaxPages); err != nil {
				yield(part{}, fmt.Errorf("chunked snapshot feed: %w", err))
				return
			}
			cf, err := s.f.feed(ctx, u)
			if err != nil {
				yield(part{}, fmt.Errorf("chunked snapshot feed: %w", err))
				return
			}
			for _, e := range cf.Entries {
				l, ok := pickLink(linksRel(e, sdshare.RelSnapshotComponent))
				if !ok {
					yield(part{}, fmt.Errorf("chunk entry %q: no snapshot-component link in a format the client reads", e.ID))
					return
				}
				i++
				if !yield(part{link: l, index: i}, nil) {
					return
				}
			}
			u = cf.Next()
		}
	}
}

// snapshotTriples streams the triples of every part, parsed as they
// arrive. Blank node labels are document-scoped, so each chunk's labels
// get the chunk's number as a prefix: _:b1 of two chunks stay two nodes.
func (s *syncer) snapshotTriples(ctx context.Context, parts func(func(part, error) bool), n *int64) iter.Seq2[rdf.Triple, error] {
	return func(yield func(rdf.Triple, error) bool) {
		var read int64 // bytes of all parts, against MaxSnapshotBytes
		for p, err := range parts {
			if err != nil {
				yield(rdf.Triple{}, err)
				return
			}
			resp, err := s.f.open(ctx, p.link.Href, acceptHeader(p.link.Type))
			if err != nil {
				if retry.Retryable(err) {
					err = fmt.Errorf("%w: %w", errTransient, err)
				}
				yield(rdf.Triple{}, err)
				return
			}
			f, err := responseFormat(resp.Header.Get("Content-Type"), p.link.Type)
			if err != nil {
				resp.Body.Close()
				yield(rdf.Triple{}, fmt.Errorf("%s: %w", p.link.Href, err))
				return
			}
			br := &bodyReader{r: resp.Body}
			cr := &capReader{r: br, n: &read, max: s.cfg.MaxSnapshotBytes, url: p.link.Href}
			prefix := ""
			if p.index > 0 {
				prefix = fmt.Sprintf("c%d.", p.index)
			}
			ok := true
			for t, err := range rdf.Parse(cr, f, resp.Request.URL.String()) {
				if err != nil {
					if cr.err != nil {
						err = cr.err
					} else if br.err != nil {
						err = fmt.Errorf("%w: %s: %w", errTransient, p.link.Href, br.err)
					} else {
						err = fmt.Errorf("%s: %w", p.link.Href, err)
					}
					yield(rdf.Triple{}, err)
					ok = false
					break
				}
				if prefix != "" {
					t = relabel(t, prefix)
				}
				*n++
				if !yield(t, nil) {
					ok = false
					break
				}
			}
			resp.Body.Close()
			if !ok {
				return
			}
			if cr.err != nil {
				yield(rdf.Triple{}, cr.err)
				return
			}
			if br.err != nil {
				yield(rdf.Triple{}, fmt.Errorf("%w: %s: %w", errTransient, p.link.Href, br.err))
				return
			}
		}
	}
}

// bodyReader remembers a read error other than EOF, so that a syntax
// error caused by a connection cut off can be told from a broken document.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, ErrTooLarge) { // a gzip bomb is not a transfer to retry
		b.err = err
	}
	return n, err
}

func relabel(t rdf.Triple, prefix string) rdf.Triple {
	if t.S.IsBlank() {
		t.S = rdf.Blank(prefix + t.S.Value)
	}
	if t.O.IsBlank() {
		t.O = rdf.Blank(prefix + t.O.Value)
	}
	return t
}

// SinceURL returns the fragments feed URL with since=t appended
// (SD-CLI-10): with ? or & as the URL needs, the value URL-encoded (a +
// offset must not become a space); u unchanged when t is zero.
func SinceURL(u string, t time.Time) string {
	if t.IsZero() {
		return u
	}
	v := url.QueryEscape(t.UTC().Format(time.RFC3339Nano))
	frag := ""
	if i := strings.IndexByte(u, '#'); i >= 0 {
		u, frag = u[:i], u[i:]
	}
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
		if strings.HasSuffix(u, "?") || strings.HasSuffix(u, "&") {
			sep = ""
		}
	}
	return u + sep + "since=" + v + frag
}

// fragments applies the fragments feed of c from st.T on (SD-CLI-7..11).
// Pages and their fragments are read ahead (feedPages); each page is
// applied, in batches, before t moves to it.
func (s *syncer) fragments(ctx context.Context, c Collection, graph string, st *CollectionState, cr *CollectionReport) error {
	// Once an entry failed, t goes no further than the oldest failed
	// entry's updated (heldAt; since is inclusive, so the next run asks
	// for it again), and stays where it is when that entry has no updated
	// (holdHere).
	holdHere, heldAt := false, time.Time{}
	var newest time.Time // newest updated applied in this run
	failed := func(e atom.Entry, err error) {
		err = redact.Error(err)
		f := Failure{URL: entryLink(e), Updated: e.Updated, Err: err.Error(), Cause: err}
		if len(e.Resources) == 1 {
			f.Resource = e.Resources[0]
		}
		s.failed(cr, f)
		s.emit(Event{Collection: c.name(), Kind: "fragment-failed", URL: shortenTo(f.URL, maxFailureText), Err: shortenTo(f.Err, maxFailureText)})
		switch {
		case e.Updated.IsZero():
			holdHere = true
		case heldAt.IsZero() || e.Updated.Before(heldAt):
			heldAt = e.Updated
		}
	}
	// Fragments are applied in batches: one write (one commit) each.
	var (
		batch    []graphstore.Fragment
		batchOf  []atom.Entry
		batchMem int64
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		errs := graphstore.ApplyFragments(ctx, s.cfg.Store, graph, batch)
		for i, e := range batchOf {
			if errs != nil && errs[i] != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				failed(e, fmt.Errorf("applying %s: %w", batch[i].Resource.Value, errs[i]))
				continue
			}
			cr.Applied++
			if len(batch[i].Triples) == 0 {
				cr.Deleted++
			}
			if e.Updated.After(newest) {
				newest = e.Updated
			}
		}
		clear(batch)
		batch, batchOf, batchMem = batch[:0], batchOf[:0], 0
		return nil
	}
	for fp := range s.feedPages(ctx, SinceURL(c.FragmentsFeed, st.T)) {
		if fp.err != nil {
			return fmt.Errorf("fragments feed: %w", fp.err)
		}
		cr.Pages++
		for _, fe := range fp.future {
			cr.FutureUpdated++
			s.emit(Event{Collection: c.name(), Kind: "future-updated", URL: fe.link,
				Err: fmt.Sprintf("entry %q is dated %s, in the future: taken as %s", fe.id, fe.from.Format(time.RFC3339), fe.to.Format(time.RFC3339))})
		}
		entries := fp.entries
		outOfOrder := false
		for _, e := range entries {
			if !e.Updated.IsZero() && !st.T.IsZero() && e.Updated.Before(st.T) && cr.Pages > 1 {
				outOfOrder = true
			}
		}
		for i, e := range entries {
			p := fp.take(ctx, i)
			if p.bulk {
				cr.Bulk++
			}
			if p.err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				failed(e, p.err)
				continue
			}
			batch, batchOf = append(batch, p.frag), append(batchOf, e)
			batchMem += p.mem
			if len(batch) >= maxBatchFragments || batchMem >= maxBatchMemory {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
		if outOfOrder {
			cr.OutOfOrder++
		}
		// The page is applied, and the store committed each batch:
		// record t (SD-CLI-9), never past a failed entry.
		next := newest
		if !heldAt.IsZero() {
			next = heldAt
		}
		if !holdHere && next.After(st.T) {
			st.T = next
			if err := s.cfg.State.Put(c.CollectionFeed, *st); err != nil {
				return fmt.Errorf("%w: %w", errStateWrite, err)
			}
		}
		s.emit(Event{Collection: c.name(), Kind: "page", URL: fp.url, Fragments: len(entries), T: st.T})
	}
	return ctx.Err()
}

// clampTime is how entries dated in the future are moved back to the
// limit (feedPages; the report's FutureUpdated): the page's own updated
// when that is not in the future, else now. t follows the entries'
// updated, and since is inclusive, so an entry dated 9999-12-31 would
// otherwise move t there and no later change would ever be asked for
// again; clamped, the entry is still applied, is asked for again next
// run (and reported again), and genuine changes after the limit still
// arrive.
//
// clampTime returns t, and true, when t is no later than now plus
// MaxSkew; else the feed's updated when that is not in the future
// either, or now, and false.
func (s *syncer) clampTime(feedUpdated, t time.Time) (time.Time, bool) {
	now := time.Now().UTC()
	horizon := now.Add(s.cfg.MaxSkew)
	if !t.After(horizon) {
		return t, true
	}
	if !feedUpdated.IsZero() && !feedUpdated.After(horizon) {
		return feedUpdated, false
	}
	return now, false
}

func entryLink(e atom.Entry) string {
	if ls := linksRel(e, sdshare.RelFragment); len(ls) > 0 {
		return ls[0].Href
	}
	if len(e.Links) > 0 {
		return e.Links[0].Href
	}
	return e.ID
}

// ErrMalformedEntry: a fragments feed entry SD-CLI-14 calls an error.
var ErrMalformedEntry = errors.New("malformed fragment entry")

// fetchEntry fetches and parses the fragment of entry e, and checks that
// it is about e's resource only. Safe for concurrent use.
func (s *syncer) fetchEntry(ctx context.Context, e atom.Entry) (graphstore.Fragment, error) {
	r, l, err := fragmentLink(e)
	if err != nil {
		return graphstore.Fragment{}, err
	}
	body, ct, final, _, err := s.f.get(ctx, l.Href, acceptHeader(l.Type), s.cfg.MaxFragmentBytes)
	if err != nil {
		return graphstore.Fragment{}, err
	}
	f, err := responseFormat(ct, l.Type)
	if err != nil {
		return graphstore.Fragment{}, fmt.Errorf("%s: %w", l.Href, err)
	}
	return s.parseFragment(body, f, final, l.Href, r)
}

// fragmentLink checks entry e (SD-CLI-14) and returns its resource and
// the link of its fragment in the format the client prefers.
func fragmentLink(e atom.Entry) (string, atom.Link, error) {
	switch {
	case len(e.Resources) != 1:
		return "", atom.Link{}, fmt.Errorf("%w: entry %q has %d sdshare:resource elements, want 1", ErrMalformedEntry, e.ID, len(e.Resources))
	case e.Updated.IsZero():
		return "", atom.Link{}, fmt.Errorf("%w: entry %q has no valid updated", ErrMalformedEntry, e.ID)
	}
	r := e.Resources[0]
	if u, err := url.Parse(r); err != nil || !u.IsAbs() {
		return "", atom.Link{}, fmt.Errorf("%w: entry %q: resource %q is not an absolute IRI", ErrMalformedEntry, e.ID, r)
	}
	links := linksRel(e, sdshare.RelFragment)
	if len(links) == 0 {
		// Ontopia's feeds link fragments with rel alternate only.
		links = e.LinksRel("alternate")
	}
	l, ok := pickLink(links)
	if !ok {
		return "", atom.Link{}, fmt.Errorf("%w: entry %q has no fragment link in a format the client reads", ErrMalformedEntry, e.ID)
	}
	return r, l, nil
}

// parseFragment parses the fragment of resource r (body, in format f,
// relative references against base; href names it in errors) and
// checks that it is about r only: the one check of a fragment, whether a
// GET or a bulk request brought it.
func (s *syncer) parseFragment(body []byte, f rdf.Format, base, href, r string) (graphstore.Fragment, error) {
	var ts []rdf.Triple
	maxTriples := int64(math.MaxInt64)
	if s.cfg.MaxFragmentBytes < math.MaxInt64/fragmentMemoryFactor {
		maxTriples = fragmentMemoryFactor * s.cfg.MaxFragmentBytes / sdshare.TripleMemory
	}
	br := readers.Get().(*bufio.Reader)
	defer readers.Put(br)
	br.Reset(bytes.NewReader(body))
	for t, err := range rdf.Parse(br, f, base) {
		if err != nil {
			return graphstore.Fragment{}, fmt.Errorf("%s: %w", href, err)
		}
		if int64(len(ts)) >= maxTriples {
			return graphstore.Fragment{}, fmt.Errorf("%w: %s has more than %d statements (their memory %d times the fragment size limit), nothing applied", ErrTooLarge, href, maxTriples, fragmentMemoryFactor)
		}
		ts = append(ts, t)
	}
	if len(ts) > 0 {
		// The push receiver's rule: a fragment of r holds r's statements
		// and those of the blank nodes they reach, nothing about others.
		if _, err := sdshare.Split(ts, []string{r}); err != nil {
			return graphstore.Fragment{}, fmt.Errorf("fragment %s of %s refused, nothing applied: %w", href, r, err)
		}
	}
	return graphstore.Fragment{Resource: rdf.IRI(r), Triples: ts}, nil
}
