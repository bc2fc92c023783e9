package publish

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/feed"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/storage"
)

// Set is one set of resources: it gets its own Capability List.
type Set struct {
	// Name is the set's name, used in paths and URLs: letters, digits,
	// '.', '_' and '-', not starting with '.'.
	Name string
	// Store is the set's state, already filled by a scan. Publish reads
	// its inventory and journal and keeps its own bookkeeping in the
	// store's meta area under keys starting with "publish.".
	Store store.Store
	// Dir is the collection directory: dumps read resource bytes from
	// Dir/<path>. Needed only when Config.Dumps is set.
	Dir string
	// Content, if set, is the collection instead of Dir (a bucket read
	// through storage.Content): dumps stream resource bytes from it.
	Content storage.Content
	// ResourceBase is the URL prefix of the set's resources, ending with
	// "/": a resource's loc is ResourceBase + scan.EscapePath(path).
	ResourceBase string
	// Loc, if set, replaces scan.EscapePath: it maps a resource's path to
	// its escaped URL path below ResourceBase. A store whose paths are not
	// file paths (the SDShare server keys resources by IRI) gives locs
	// that a Destination can map to files.
	Loc func(path string) string
	// Follow renders the set's documents from the meta that the process
	// holding its scanner role recorded (Config.Replicas), instead of
	// deciding them: nothing is written to the store. See Render.
	Follow bool
}

// loc returns the URL of the resource at path.
func (s *Set) loc(path string) string {
	if s.Loc != nil {
		return s.ResourceBase + s.Loc(path)
	}
	return s.ResourceBase + scan.EscapePath(path)
}

// Config configures Publish.
type Config struct {
	// BaseURL is the URL of Out, ending with "/"; every document's URL is
	// BaseURL + its path relative to Out.
	BaseURL string
	Sets    []Set
	// Out is the root of the output tree.
	Out string
	// ChangeListPeriod is the period after which the open Change List is
	// closed; boundaries are multiples of it since the Unix epoch.
	// Default 1h.
	ChangeListPeriod time.Duration
	// MaxEntries is the largest number of entries per document (Resource
	// List parts, Change Lists, dump manifests). Default rs.MaxEntries.
	MaxEntries int
	// Dumps enables the Resource Dump and the Change Dump.
	Dumps bool
	// DumpsOnDemand (with Dumps) writes no package: Publish plans them
	// (their lengths and manifests' digests, in the store's meta, from the
	// inventory and the journal without reading a file) and writes the
	// dump documents; a Dumps made from the same Config serves each
	// package when it is requested, streamed from Set.Dir. Without it the
	// packages are written as files under Out (a copy of the collection),
	// for a plain web server.
	DumpsOnDemand bool
	// DumpPartBytes caps the size of the resources in one Resource Dump
	// package (a resource larger than it gets a package of its own).
	// Default 256 MiB.
	DumpPartBytes int64
	// DumpInterval is the least time between two Resource Dumps: a new
	// dump (a full copy of the collection) is written when the collection
	// changed since the last one and that one is at least this old.
	// Default 24h; the Change Dumps carry the changes in between.
	DumpInterval time.Duration
	// Archives enables the Resource List Archive and the Change List
	// Archive, and with written Dumps (not DumpsOnDemand) the Resource
	// Dump Archive and the Change Dump Archive (see the package
	// documentation for the layout it implies).
	Archives bool
	// ArchivedResourceLists is how many previous Resource Lists the
	// Resource List Archive names and keeps; default 10.
	ArchivedResourceLists int
	// ArchivedResourceDumps is how many previous Resource Dumps the
	// Resource Dump Archive (Archives with written Dumps) names and keeps;
	// default 1, negative: none (no Resource Dump Archive). Each is a full
	// copy of the collection, hence the small default.
	ArchivedResourceDumps int
	// Notification, if set, returns the WebSub topic and hub URLs of a
	// set's change notification channel; the Capability List then carries
	// a change-notification entry. Empty strings mean no channel.
	Notification func(set string) (topicURL, hubURL string)
	// CapabilityLinks, if set, returns more root links (rs:ln) of a set's
	// Capability List, such as the WebSocket subscription endpoint
	// (wspush.SubscriptionRel): ResourceSync clients ignore relations
	// they do not know.
	CapabilityLinks func(set string) []rs.Link
	// Replicas: the stores are shared by several processes (Source
	// replicas), each with its own Out. Publish then records in the meta
	// what a replica needs to render identical documents (each Resource
	// List part's sha-256, the open Change List's last record), and Sets
	// with Follow are rendered from that meta. Dumps and Archives are
	// turned off: their documents depend on files only the process that
	// wrote them has.
	Replicas bool
	// OpenChangeList makes each Capability List name the set's open
	// Change List instead of the Change List Index (which is still
	// written, and named by every Change List's rel="index"): a layout
	// for clients that cannot read an index in their incremental mode
	// (py-resync 2.0.1). When the open list closes, the next Publish
	// names the new open list; a Destination that finds the list it
	// followed closed looks in its rel="index" or the Change List Archive
	// for the lists in between (RS-CHL-7).
	OpenChangeList bool
	// Feeds also writes each set's changes as an IIIF Change Discovery
	// 1.0 collection and an LDES (package feed) under FeedDir(set), built
	// from the journal incrementally, and links them from the Capability
	// List and the Source Description (rs:ln rel="alternate" with their
	// media types, which ResourceSync clients ignore). Off with Replicas.
	Feeds bool
	// FeedPageSize is the number of activities per feed page; default
	// feed.DefaultPageSize, at most 10,000. Changing it begins the feeds
	// again.
	FeedPageSize int
	// PlainSitemap also writes plain sitemaps.org documents of every set
	// (no ResourceSync element: search engines flag rs:md and rs:ln),
	// an index at PlainSitemapPath named by robots.txt; see
	// plainsitemap.go. Off with Replicas.
	PlainSitemap bool
	// NoCompanions turns off the HTML companions: by default every
	// document NAME.xml gets a readable page NAME.html beside it (paged as
	// NAME.2.html, … beyond 1,000 entries) for static hosting; see
	// companion.go.
	NoCompanions bool
	// GzipLists stores the Resource List (the single document and its
	// archived generations, or each part of a split one) compressed, as
	// NAME.xml.gz (GzipSuffix) in place of NAME.xml: it is the bulk of a
	// large Source's documents (about 276 bytes an entry, a quarter of
	// that compressed). Only for a tree that source/server serves (serve's
	// own, which answers NAME.xml from it, compressed or not as the client
	// accepts); a static tree for another web server keeps plain files.
	// A document written in one form removes its other form; parts
	// already written keep theirs (names are never reused), so turning it
	// on or off needs no rewrite. The index of a split list stays plain.
	GzipLists bool
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger receives one line per notable event; default slog.Default().
	Logger *slog.Logger
}

// Report says what one Publish run did.
type Report struct {
	Sets     []SetReport
	Robots   string // path of the robots.txt written at the root of Out, "" if a user's file was kept
	Duration time.Duration
}

// SetReport says what one Publish run did for one set.
type SetReport struct {
	Name string
	// Resource List
	Resources         int64 // entries in the Resource List
	ResourceListParts int   // 1 when not split
	ResourceList      bool  // a new Resource List was written (the inventory changed)
	PartsWritten      int   // Resource List parts (or the single list) written by this run
	// Change Lists
	ChangeLists int // lists in the Change List Index (closed + open)
	NewlyClosed int // lists closed by this run
	OpenEntries int // entries of the open Change List
	// Dumps
	ResourceDump      bool  // a new Resource Dump was written
	DumpParts         int   // packages of the new Resource Dump
	DumpBytes         int64 // bytes of the new Resource Dump's packages
	ChangeDumps       int   // Change Dump packages written by this run
	SkippedBitstreams int   // resources left out of packages: unreadable or changed since scanned
	// Behind: a followed set (Set.Follow) whose Resource List could not
	// be rendered as its leader published it (nothing published yet, or
	// the inventory moved on since): the previous documents are kept;
	// render again after the leader's next Publish.
	Behind bool
}

// Paths of the documents relative to Out.
const (
	wellKnownPath = ".well-known/resourcesync"
	robotsPath    = "robots.txt"
	docRoot       = ".resourcesync"
	robotsMarker  = "# Written by resourcesync publish; it is rewritten on every run."
)

var setName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*$`)

// ErrConfig is matched by the error Publish returns for an invalid Config.
var ErrConfig = errors.New("publish: invalid configuration")

type publisher struct {
	cfg Config
	log *slog.Logger
	now time.Time
	// held is, per set and meta key (Config.Replicas), the meta value
	// this run's documents were written from or checked against: what
	// the tree holds once the run is done (see remember).
	held map[string][]byte
	// openCL is, per set, the path of the open Change List this run
	// wrote (Config.OpenChangeList).
	openCL map[string]string
	// streams are the companions built while this run wrote its
	// documents, by final path (see companion.go).
	streamMu sync.Mutex
	streams  map[string]*docStream
}

// Publish writes the documents of every set of cfg under cfg.Out, then the
// Source Description and robots.txt. It is idempotent: a run writes what
// changed since the last run, as recorded in the sets' stores; closed
// Change Lists are never rewritten with different bytes. At every moment,
// also when the process is killed, every document reachable from the
// Source Description exists and is complete (see the package
// documentation). Calls in one process that name the same Out run one at
// a time; runs from several processes on one Out must not overlap.
func Publish(ctx context.Context, cfg Config) (Report, error) {
	start := time.Now()
	if err := cfg.defaults(); err != nil {
		return Report{}, err
	}
	unlock := lockOut(cfg.Out)
	defer unlock()
	p := &publisher{cfg: cfg, log: cfg.Logger, now: cfg.Now().UTC()}
	var rep Report
	if ok, err := p.renderedAll(ctx); err != nil || ok {
		// A render with nothing new (replicas are signalled on every
		// commit, most of which change no document): no file is touched.
		for _, s := range cfg.Sets {
			rep.Sets = append(rep.Sets, SetReport{Name: s.Name})
		}
		rep.Duration = time.Since(start)
		return rep, err
	}
	if err := removeTemps(filepath.Join(cfg.Out, docRoot)); err != nil {
		return rep, err
	}
	defer p.streamCompanions()()
	// The Source Description and robots.txt are written outside docRoot:
	// only their own temporary names are removed there.
	for _, rel := range []string{wellKnownPath, robotsPath, companionName(wellKnownPath, 1)} {
		f := filepath.Join(cfg.Out, filepath.FromSlash(rel))
		olds, _ := filepath.Glob(filepath.Join(filepath.Dir(f), tmpPrefix+filepath.Base(f)+"-*"))
		for _, o := range olds {
			os.Remove(o)
		}
	}
	plain := map[string]plainState{}
	for i := range cfg.Sets {
		sr, err := p.publishSet(ctx, &cfg.Sets[i])
		rep.Sets = append(rep.Sets, sr)
		if err != nil {
			return rep, fmt.Errorf("publish: set %q: %w", cfg.Sets[i].Name, err)
		}
		if cfg.PlainSitemap {
			if plain[cfg.Sets[i].Name], err = p.plainSitemap(ctx, &cfg.Sets[i]); err != nil {
				return rep, fmt.Errorf("publish: set %q: %w", cfg.Sets[i].Name, err)
			}
		}
	}
	if cfg.PlainSitemap {
		if err := p.writePlainIndex(plain); err != nil {
			return rep, err
		}
	}
	if err := p.writeSourceDescription(); err != nil {
		return rep, err
	}
	robots, err := p.writeRobots()
	rep.Robots = robots
	if err == nil {
		err = p.companions()
	}
	os.Remove(p.spoolDir()) // empty once every Splitter is closed
	rep.Duration = time.Since(start)
	return rep, err
}

// outLocks serialises the runs of this process per output tree.
var outLocks sync.Map // absolute Out -> *sync.Mutex

func lockOut(out string) (unlock func()) {
	if abs, err := filepath.Abs(out); err == nil {
		out = abs
	}
	m, _ := outLocks.LoadOrStore(out, new(sync.Mutex))
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

func (c *Config) defaults() error {
	if !strings.HasSuffix(c.BaseURL, "/") || !strings.Contains(c.BaseURL, "://") {
		return fmt.Errorf("%w: BaseURL %q must be absolute and end with /", ErrConfig, c.BaseURL)
	}
	if c.Out == "" {
		return fmt.Errorf("%w: no Out directory", ErrConfig)
	}
	seen := map[string]bool{}
	for _, s := range c.Sets {
		if !setName.MatchString(s.Name) || seen[s.Name] {
			return fmt.Errorf("%w: set name %q", ErrConfig, s.Name)
		}
		seen[s.Name] = true
		if s.Store == nil {
			return fmt.Errorf("%w: set %q has no store", ErrConfig, s.Name)
		}
		if !strings.HasSuffix(s.ResourceBase, "/") {
			return fmt.Errorf("%w: set %q: ResourceBase %q must end with /", ErrConfig, s.Name, s.ResourceBase)
		}
		if c.Dumps && !c.Replicas && s.Dir == "" && s.Content == nil {
			return fmt.Errorf("%w: set %q: dumps need Dir", ErrConfig, s.Name)
		}
	}
	if c.Replicas {
		c.Dumps, c.Archives, c.Feeds, c.PlainSitemap = false, false, false, false
	}
	if c.FeedPageSize <= 0 {
		c.FeedPageSize = feed.DefaultPageSize
	}
	// A page is held in memory while it is written.
	c.FeedPageSize = min(c.FeedPageSize, 10000)
	if c.ChangeListPeriod <= 0 {
		c.ChangeListPeriod = time.Hour
	}
	if c.MaxEntries <= 0 || c.MaxEntries > rs.MaxEntries {
		c.MaxEntries = rs.MaxEntries
	}
	if c.DumpPartBytes <= 0 {
		c.DumpPartBytes = 256 << 20
	}
	if c.DumpInterval <= 0 {
		c.DumpInterval = 24 * time.Hour
	}
	if c.ArchivedResourceLists <= 0 {
		c.ArchivedResourceLists = 10
	}
	if c.ArchivedResourceDumps == 0 {
		c.ArchivedResourceDumps = 1
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// setDoc returns the path (relative to Out, slash-separated) of a document
// of set.
func setDoc(set string, rel string) string { return docRoot + "/" + set + "/" + rel }

func (p *publisher) url(rel string) string { return p.cfg.BaseURL + rel }

func (p *publisher) file(rel string) string { return filepath.Join(p.cfg.Out, filepath.FromSlash(rel)) }

func (p *publisher) capListURL(set string) string { return p.url(setDoc(set, "capabilitylist.xml")) }

// spoolDir is where the Splitter spools a part being built: inside Out (so
// a killed run's spool is removed by the next run), created on demand.
func (p *publisher) spoolDir() string {
	d := p.file(docRoot + "/" + tmpPrefix + "spool")
	os.MkdirAll(d, dirPerm)
	return d
}

func (p *publisher) publishSet(ctx context.Context, s *Set) (SetReport, error) {
	sr := SetReport{Name: s.Name}
	if s.Follow {
		if !p.cfg.Replicas {
			return sr, fmt.Errorf("%w: set %q follows without Replicas", ErrConfig, s.Name)
		}
		return sr, p.renderSet(ctx, s, &sr)
	}
	if err := p.ensureBaseline(ctx, s); err != nil {
		return sr, err
	}
	rlURL, cleanup, err := p.resourceList(ctx, s, &sr)
	if err != nil {
		return sr, err
	}
	cl, err := p.changeLists(ctx, s, &sr)
	if err != nil {
		return sr, err
	}
	if p.cfg.Feeds {
		if err := p.feeds(ctx, s); err != nil {
			return sr, err
		}
	}
	if p.cfg.Dumps {
		if err := p.resourceDump(ctx, s, &sr); err != nil {
			return sr, err
		}
		if err := p.changeDumps(ctx, s, cl, &sr); err != nil {
			return sr, err
		}
	}
	if err := p.writeCapabilityList(s, rlURL); err != nil {
		return sr, err
	}
	if err := cleanup(); err != nil {
		return sr, err
	}
	if p.cfg.Replicas {
		// What this tree now holds, so that a render of the same meta
		// (this process following again) has nothing to do.
		p.remember(s, len(cl))
	}
	return sr, nil
}

// ensureBaseline records the baseline of a set never published whose
// journal is empty and that has no baseline (a state filled by other means,
// or a first scan not completed): the baseline is what is published now, so
// that a later scan journals what it adds instead of changing the inventory
// behind the documents. It is done first, so that the Resource List and
// the dumps describe the state with its baseline.
func (p *publisher) ensureBaseline(ctx context.Context, s *Set) error {
	if _, err := s.Store.GetMeta(ctx, metaChangeLists); !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if _, ok, err := store.BaselineTime(ctx, s.Store); err != nil || ok {
		return err
	}
	ss, err := s.Store.Stats(ctx)
	if err != nil || ss.LastSeq != 0 {
		return err
	}
	if err := s.Store.PutMeta(ctx, store.MetaBaseline, store.FormatBaseline(p.now)); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}

// writeCapabilityList writes the set's Capability List. Every document it
// names has been written before it.
func (p *publisher) writeCapabilityList(s *Set, rlURL string) error {
	h := rs.Head{MD: rs.Metadata{Capability: rs.CapCapabilityList},
		Links: append([]rs.Link{{Rel: rs.RelUp, Href: p.url(wellKnownPath)}}, p.feedLinks(s.Name)...)}
	if p.cfg.CapabilityLinks != nil {
		h.Links = append(h.Links, p.cfg.CapabilityLinks(s.Name)...)
	}
	ent := func(c rs.Capability, rel string) rs.Entry {
		return rs.Entry{Loc: p.url(setDoc(s.Name, rel)), MD: rs.Metadata{Capability: c}}
	}
	cl := ent(rs.CapChangeList, "changelist.xml")
	if open := p.openCL[s.Name]; p.cfg.OpenChangeList && open != "" {
		cl.Loc = p.url(open)
	}
	es := []rs.Entry{
		{Loc: rlURL, MD: rs.Metadata{Capability: rs.CapResourceList}},
		cl,
	}
	if p.cfg.Dumps {
		es = append(es, ent(rs.CapResourceDump, "resourcedump.xml"), ent(rs.CapChangeDump, "changedump.xml"))
	}
	if p.cfg.Archives {
		es = append(es, ent(rs.CapResourceListArchive, "resourcelist-archive.xml"),
			ent(rs.CapChangeListArchive, "changelist-archive.xml"))
	}
	if p.archiveResourceDumps() {
		es = append(es, ent(rs.CapResourceDumpArchive, "resourcedump-archive.xml"))
	}
	if p.archiveDumps() {
		es = append(es, ent(rs.CapChangeDumpArchive, "changedump-archive.xml"))
	}
	if p.cfg.Notification != nil {
		if topic, hub := p.cfg.Notification(s.Name); topic != "" && hub != "" {
			es = append(es, rs.Entry{Loc: topic, MD: rs.Metadata{Capability: rs.CapChangeNotification},
				Links: []rs.Link{{Rel: rs.RelHub, Href: hub}}})
		}
	}
	return writeDoc(p.file(setDoc(s.Name, "capabilitylist.xml")), &h, es)
}

// writeSourceDescription writes the Source Description naming every set's
// Capability List.
func (p *publisher) writeSourceDescription() error {
	h := rs.Head{MD: rs.Metadata{Capability: rs.CapDescription}}
	var es []rs.Entry
	for _, s := range p.cfg.Sets {
		es = append(es, rs.Entry{Loc: p.capListURL(s.Name), MD: rs.Metadata{Capability: rs.CapCapabilityList},
			Links: p.feedLinks(s.Name)})
	}
	return writeDoc(p.file(wellKnownPath), &h, es)
}

// writeRobots writes robots.txt with a Sitemap line per set's Resource
// List: always at .resourcesync/robots.txt, and at the root of Out unless a
// robots.txt not written by Publish is there.
func (p *publisher) writeRobots() (string, error) {
	var b strings.Builder
	b.WriteString(robotsMarker + "\nUser-agent: *\nDisallow:\n")
	if p.cfg.PlainSitemap {
		// Only the plain index: crawlers flag the rs: elements of the
		// Resource Lists.
		fmt.Fprintf(&b, "Sitemap: %s\n", p.url(plainIndexPath))
	} else {
		for _, s := range p.cfg.Sets {
			fmt.Fprintf(&b, "Sitemap: %s\n", p.url(setDoc(s.Name, "resourcelist.xml")))
		}
	}
	fill := func(w io.Writer) error { _, err := io.WriteString(w, b.String()); return err }
	if err := writeAtomic(p.file(docRoot+"/robots.txt"), fill); err != nil {
		return "", err
	}
	root := p.file(robotsPath)
	if f, err := os.Open(root); err == nil {
		line, _ := bufio.NewReader(f).ReadString('\n')
		f.Close()
		if strings.TrimRight(line, "\r\n") != robotsMarker {
			p.log.Warn("publish: keeping the user's robots.txt; ours is in .resourcesync/robots.txt", "path", root)
			return "", nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("publish: %w", err)
	}
	return root, writeAtomic(root, fill)
}

// writeDoc writes a small document (head and entries held in memory)
// atomically at path.
func writeDoc(path string, h *rs.Head, es []rs.Entry) error {
	return writeDocSeq(path, h, func(emit func(*rs.Entry) error) error {
		for i := range es {
			if err := emit(&es[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeDocSeq writes a document atomically at path, its entries streamed
// by entries.
func writeDocSeq(path string, h *rs.Head, entries func(emit func(*rs.Entry) error) error) error {
	return writeAtomic(path, func(w io.Writer) error { return encodeDoc(w, path, h, entries) })
}

// encodeDoc encodes a document to w.
// When w is a document of an Out whose run writes companions, the
// companion's pages are built from the same entries (companion.go).
func encodeDoc(w io.Writer, name string, h *rs.Head, entries func(emit func(*rs.Entry) error) error) error {
	ds := startStream(w, name, h)
	enc := rs.NewEncoder(ds.writer(w))
	if err := enc.WriteHead(h); err != nil {
		ds.abort()
		return fmt.Errorf("publish: %s: %w", name, err)
	}
	emit := enc.WriteEntry
	if ds != nil {
		emit = func(e *rs.Entry) error {
			if err := enc.WriteEntry(e); err != nil {
				return err
			}
			return ds.add(e)
		}
	}
	if err := entries(emit); err != nil {
		ds.abort()
		return fmt.Errorf("publish: %s: %w", name, err)
	}
	if err := enc.Close(); err != nil {
		ds.abort()
		return fmt.Errorf("publish: %s: %w", name, err)
	}
	ds.done()
	return nil
}

// resourceMD returns the metadata every entry about r carries.
func resourceMD(r *store.Resource) rs.Metadata {
	return rs.Metadata{
		Hashes: rs.Hashes{
			{Alg: rs.MD5, Value: hex.EncodeToString(r.MD5[:])},
			{Alg: rs.SHA256, Value: hex.EncodeToString(r.SHA256[:])},
		},
		Length: r.Size, HasLength: true, Type: r.Type,
	}
}

// resourceEntry returns the entry of r in set s.
func resourceEntry(s *Set, r *store.Resource) rs.Entry {
	e := rs.Entry{Loc: s.loc(r.Path), MD: resourceMD(r)}
	if !r.LastMod.IsZero() {
		e.LastMod = rs.NewTime(r.LastMod.UTC())
	}
	return e
}

// compact formats t for use in file names.
func compact(t time.Time) string { return t.UTC().Format("20060102T150405.000000000Z") }

// getMeta decodes the JSON meta value under key into v; it reports false
// when there is none.
func getMeta(ctx context.Context, st store.Store, key string, v any) (bool, error) {
	b, err := getMetaRaw(ctx, st, key, v)
	return b != nil, err
}

// getMetaRaw is getMeta that returns the value's bytes (nil if absent).
func getMetaRaw(ctx context.Context, st store.Store, key string, v any) ([]byte, error) {
	b, err := st.GetMeta(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("meta %s: %w", key, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("meta %s: %w", key, err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

func putMeta(ctx context.Context, st store.Store, key string, v any) error {
	_, err := putMetaRaw(ctx, st, key, v)
	return err
}

// putMetaRaw is putMeta that returns the bytes written.
func putMetaRaw(ctx context.Context, st store.Store, key string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("meta %s: %w", key, err)
	}
	if err := st.PutMeta(ctx, key, b); err != nil {
		return nil, fmt.Errorf("meta %s: %w", key, err)
	}
	return b, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// removeExcept removes the entries of dir (generation directories or
// packages) whose names are not in keep.
func removeExcept(dir string, keep map[string]bool) error {
	des, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	for _, de := range des {
		if keep[de.Name()] || keptCompanion(de.Name(), keep) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, de.Name())); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
	}
	return nil
}
