package discover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/resourcesync-go/resourcesync/internal/redact"
	"github.com/resourcesync-go/resourcesync/rs"
)

// WellKnownPath is where a Source Description is expected (RFC 8615).
const WellKnownPath = ".well-known/resourcesync"

// ErrNotFound is matched by the error Discover returns when no
// ResourceSync document was found; the error is a *NotFoundError.
var ErrNotFound = errors.New("no ResourceSync document found")

// ErrNamedDocument is wrapped, with the fetch's error, when SOURCE names a
// document (a Resource List, a Capability List, a .well-known/resourcesync)
// that cannot be fetched: no other place is searched then, so that a
// missing list never makes Discover return some other document.
var ErrNamedDocument = errors.New("SOURCE names a document that cannot be fetched (no other place is searched)")

// Tried is one URL Discover fetched in vain, and why.
type Tried struct {
	URL string
	Err error
}

// NotFoundError lists what Discover tried. It matches ErrNotFound and
// unwraps to each attempt's error (so errors.As finds a *StatusError).
type NotFoundError struct {
	Source string
	Tried  []Tried
}

// Error lists the attempts, credentials in their URLs redacted
// (internal/redact), as every error of the package.
func (e *NotFoundError) Error() string {
	var b strings.Builder
	b.WriteString("discover " + e.Source + ": " + ErrNotFound.Error())
	if len(e.Tried) > 0 {
		b.WriteString("; tried:")
		for _, t := range e.Tried {
			b.WriteString("\n\t" + t.URL + ": " + t.Err.Error())
		}
	}
	return redact.String(b.String())
}

func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

func (e *NotFoundError) Unwrap() []error {
	errs := make([]error, len(e.Tried))
	for i, t := range e.Tried {
		errs[i] = t.Err
	}
	return errs
}

// Result is what Discover found.
type Result struct {
	Source string // as given
	// SourceDescription is the URL of the Source Description: the one
	// read, else the one a Capability List's rel="up" names; "" when none
	// was found.
	SourceDescription string
	// Base is the Source's base URL, ending with "/": resources map to
	// paths relative to it.
	Base string
	Sets []Set
}

// Set is one set of resources: what its Capability List offers.
type Set struct {
	// Name is short and unique within the Result, and safe as a file name
	// or key: letters, digits, '.', '_' and '-', not starting with '.'.
	Name string
	// CapabilityList is its URL; "" when SOURCE was a document given
	// directly without a usable up link.
	CapabilityList string
	// Links are the Capability List's root links (describedby, up, hub, ...).
	Links []rs.Link
	// Locations of the capability documents offered, "" when not offered.
	// Each may be a list or an index: the root element decides.
	ResourceList, ResourceDump, ChangeList, ChangeDump                             string
	ResourceListArchive, ChangeListArchive, ResourceDumpArchive, ChangeDumpArchive string
	// ChangeNotification is the WebSub topic of the set's change
	// notifications and ChangeNotificationHub its hub (RS-WS-7), "" when
	// not offered.
	ChangeNotification, ChangeNotificationHub string
	// Direct is the URL of the document when SOURCE was a Resource List,
	// Change List, dump, archive or index given directly, and
	// DirectCapability its capability.
	Direct           string
	DirectCapability rs.Capability
	// Feed is the URL of a change feed given as SOURCE instead of a
	// ResourceSync document, and FeedKind its kind (FeedIIIF); "" for a
	// ResourceSync set. A feed set offers nothing else: the mirror reads
	// its changes as it reads a Change List's (destination/feedsync).
	Feed, FeedKind string
}

// Kinds of change feed Discover recognises (Set.FeedKind).
const (
	// FeedIIIF is an IIIF Change Discovery 1.0 OrderedCollection or
	// OrderedCollectionPage.
	FeedIIIF = "iiif-change-discovery"
	// FeedLDES is a Linked Data Event Stream: its ldes:EventStream or
	// one of its tree:Nodes.
	FeedLDES = "ldes"
)

// maxSets bounds the Capability Lists one discovery follows; maxCandidates
// the documents probed from robots.txt or Link headers.
const (
	maxSets       = 10000
	maxCandidates = 50
)

// Discover finds the sets of resources of a Source from source, which may
// be a Source's base URL, its /.well-known/resourcesync URL, a Source
// Description (or its index), a Capability List, or a capability document
// given directly (a Resource List, Change List, dump, archive or index of
// one; its rel="up" is followed to the Capability List).
//
// When source is not a ResourceSync document, Discover looks, in order, for
// Link: <...>; rel="resourcesync" on its response, <link rel="resourcesync">
// in an HTML body, <source as a directory>/.well-known/resourcesync,
// <source's directory>/.well-known/resourcesync, the host's
// /.well-known/resourcesync, and the Sitemap lines of the host's
// robots.txt, and stops at the first that yields a document. When source
// names a document (see namesDocument) that answers with an error status,
// Discover fails with ErrNamedDocument instead of searching elsewhere. Relative
// references are resolved against the URL they were found at, after
// redirects.
//
// g may be nil (a zero Getter). Errors: *NotFoundError (ErrNotFound) when
// nothing was found; otherwise the error that stopped the discovery: a
// network error, ErrTooLarge, the context's, or the failure to read a
// Capability List that a Source Description names.
func Discover(ctx context.Context, g *Getter, source string) (*Result, error) {
	if g == nil {
		g = &Getter{}
	}
	su, err := url.Parse(source)
	if err != nil || (su.Scheme != "http" && su.Scheme != "https") || su.Host == "" {
		return nil, redact.Error(fmt.Errorf("discover %q: not an absolute http(s) URL", source))
	}
	d := &discoverer{g: g, res: &Result{Source: source}, seen: map[string]bool{},
		probed: map[string]bool{su.String(): true}, nf: &NotFoundError{Source: source}}
	found, err := d.run(ctx, su)
	if err != nil {
		return nil, redact.Error(fmt.Errorf("discover %s: %w", source, err))
	}
	if !found || len(d.res.Sets) == 0 {
		return nil, d.nf
	}
	d.finish()
	return d.res, nil
}

type discoverer struct {
	g      *Getter
	res    *Result
	seen   map[string]bool // capability lists and direct documents already made sets
	probed map[string]bool // URLs probed as candidates
	nf     *NotFoundError
}

// fatal reports whether err must stop the discovery rather than be
// recorded as one more place where nothing was found.
func fatal(err error) bool {
	var se *StatusError
	return !errors.As(err, &se) && !errors.Is(err, ErrNotResourceSync)
}

func (d *discoverer) tried(u string, err error) { d.nf.Tried = append(d.nf.Tried, Tried{u, err}) }

func (d *discoverer) run(ctx context.Context, su *url.URL) (bool, error) {
	source := su.String()
	b, err := d.g.get(ctx, source, d.g.maxBytes(), false)
	if err != nil {
		if fatal(err) {
			return false, err
		}
		if namesDocument(su) {
			// The user named a document: another one found beside it
			// would be mirrored in its place without their knowing.
			return false, fmt.Errorf("%w: %w", ErrNamedDocument, err)
		}
		d.tried(source, err)
		var fe *finalURLError
		if errors.As(err, &fe) {
			if fu, perr := url.Parse(fe.url); perr == nil {
				su = fu // redirected: look beside where it led
			}
		}
	} else {
		doc, derr := d.g.decode(b)
		if derr == nil {
			return true, d.fromDoc(ctx, doc, true)
		}
		if kind := feedKind(b); kind != "" {
			// A change feed of another framework, named directly: one
			// set that reads it (issue 34 §2).
			b.close()
			d.res.Sets = append(d.res.Sets, Set{Feed: b.requested, FeedKind: kind})
			return true, nil
		}
		d.tried(source, derr)
		found, err := d.fromPage(ctx, b)
		b.close()
		if found || err != nil {
			return found, err
		}
		if fu, err := url.Parse(b.url); err == nil {
			su = fu // look beside where the page really is
		}
	}
	for _, c := range wellKnownCandidates(su) {
		found, err := d.candidate(ctx, c, false)
		if found || err != nil {
			return found, err
		}
	}
	return d.robots(ctx, su)
}

// fromPage looks for rel="resourcesync" in the Link headers and, for an
// HTML page, in its <link> elements.
func (d *discoverer) fromPage(ctx context.Context, b *body) (bool, error) {
	var cands []string
	for _, l := range b.links {
		if l.HasRel(rs.RelResourceSync) {
			cands = append(cands, l.Href)
		}
	}
	if found, err := d.candidates(ctx, cands); found || err != nil {
		return found, err
	}
	page, err := b.head(maxHTML)
	if err != nil || !isHTML(b.header.Get("Content-Type"), page) {
		return false, nil
	}
	return d.candidates(ctx, htmlLinks(page, b.base, rs.RelResourceSync))
}

func isHTML(ctype string, page []byte) bool {
	if mt, _, err := mime.ParseMediaType(ctype); err == nil {
		switch mt {
		case "text/html", "application/xhtml+xml":
			return true
		case "text/plain", "application/octet-stream":
		default:
			return false
		}
	}
	return strings.HasPrefix(http.DetectContentType(page), "text/html")
}

// candidates probes each URL and makes sets of those that are ResourceSync
// documents; it reports whether any was.
func (d *discoverer) candidates(ctx context.Context, urls []string) (bool, error) {
	found := false
	seen := map[string]bool{}
	n := 0
	for _, u := range urls {
		if seen[u] || n >= maxCandidates {
			continue
		}
		seen[u] = true
		n++
		ok, err := d.candidate(ctx, u, true)
		if err != nil {
			return found, err
		}
		found = found || ok
	}
	return found, nil
}

// candidate probes one URL. With tolerant, only the context's end stops
// the discovery: the URL is one of several alternatives, possibly on
// other hosts, and one that cannot be reached must not hide the others.
func (d *discoverer) candidate(ctx context.Context, u string, tolerant bool) (bool, error) {
	if d.probed[u] {
		return false, nil
	}
	d.probed[u] = true
	doc, err := d.g.Open(ctx, u)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if fatal(err) && !tolerant {
			return false, err
		}
		d.tried(u, err)
		return false, nil
	}
	return true, d.fromDoc(ctx, doc, false)
}

// robots probes the Sitemap lines of the host's robots.txt.
func (d *discoverer) robots(ctx context.Context, su *url.URL) (bool, error) {
	ru := (&url.URL{Scheme: su.Scheme, Host: su.Host, Path: "/robots.txt"}).String()
	// Read what fits: robots.txt readers stop at a size too.
	b, err := d.g.get(ctx, ru, maxRobots, true)
	if err != nil {
		if fatal(err) {
			return false, err
		}
		d.tried(ru, err)
		return false, nil
	}
	txt, err := b.head(maxRobots)
	base := b.base
	b.close()
	if err != nil {
		return false, err
	}
	sm := robotsSitemaps(txt, base)
	if len(sm) == 0 {
		d.tried(ru, errors.New("no Sitemap line"))
		return false, nil
	}
	return d.candidates(ctx, sm)
}

// namesDocument reports whether su names a ResourceSync document rather
// than a Source's base URL or a web page: its last path segment ends in
// .xml, .xml.gz or .gz (resourcelist.xml, changelist.xml.gz), or it is a
// /.well-known/resourcesync. Only a base URL or a page is searched beside
// when it cannot be fetched.
func namesDocument(su *url.URL) bool {
	p := strings.ToLower(su.Path)
	if strings.HasSuffix(p, "/"+WellKnownPath) {
		return true
	}
	return strings.HasSuffix(p, ".xml") || strings.HasSuffix(p, ".gz")
}

// wellKnownCandidates lists the Source Description URLs tried for a URL
// that is not itself a document: the URL taken as a directory (when its
// last segment has no dot), its directory, and the host's root.
func wellKnownCandidates(su *url.URL) []string {
	var out []string
	add := func(dir string) {
		if !strings.HasSuffix(dir, "/") {
			dir += "/"
		}
		u := url.URL{Scheme: su.Scheme, Host: su.Host, Path: dir + WellKnownPath}
		s := u.String()
		for _, x := range out {
			if x == s {
				return
			}
		}
		out = append(out, s)
	}
	p := su.Path
	if p == "" {
		p = "/"
	}
	if strings.HasSuffix(p, "/"+WellKnownPath) {
		p = strings.TrimSuffix(p, WellKnownPath)
	}
	last := path.Base(p)
	if !strings.HasSuffix(p, "/") && !strings.Contains(last, ".") {
		add(p)
	}
	add(p[:strings.LastIndexByte(p, '/')+1])
	add("/")
	return out
}

// fromDoc makes sets from a ResourceSync document and closes it. direct
// tells that doc is SOURCE itself.
func (d *discoverer) fromDoc(ctx context.Context, doc *Doc, direct bool) error {
	switch doc.Capability() {
	case rs.CapDescription:
		return d.description(ctx, doc)
	case rs.CapCapabilityList:
		if d.seen[doc.Requested] {
			doc.Close()
			return nil
		}
		d.seen[doc.Requested] = true
		s, err := d.capabilityList(doc)
		if err != nil {
			return err
		}
		d.noteSD(s.link(rs.RelUp))
		d.res.Sets = append(d.res.Sets, s)
		return nil
	}
	// A capability document: its up link names its Capability List.
	up := doc.Head.Link(rs.RelUp)
	s := Set{}
	requested, capability := doc.Requested, doc.Capability()
	if direct {
		s.Direct, s.DirectCapability = requested, capability
	}
	doc.Close()
	if up = resolveRef(doc.URL, up); up != "" {
		cl, err := d.g.Open(ctx, up)
		switch {
		case err == nil && cl.Capability() == rs.CapCapabilityList:
			if d.seen[cl.Requested] && !direct {
				cl.Close()
				return nil
			}
			d.seen[cl.Requested] = true
			full, err := d.capabilityList(cl)
			if err != nil {
				return err
			}
			full.Direct, full.DirectCapability = s.Direct, s.DirectCapability
			s = full
			d.noteSD(s.link(rs.RelUp))
		case err == nil:
			cl.Close()
			d.tried(up, fmt.Errorf("up link of %s is a %q document, not a capability list", requested, cl.Capability()))
		case ctx.Err() != nil:
			return ctx.Err()
		case fatal(err) && direct:
			// SOURCE itself: a Capability List that cannot be read now
			// must not silently shrink the set to one document.
			return err
		default:
			d.tried(up, err)
		}
	}
	if s.CapabilityList == "" {
		if d.seen[requested] {
			return nil
		}
		d.seen[requested] = true
		// Found by probing and without a Capability List: still a set,
		// offering this one document.
		s.Direct, s.DirectCapability = requested, capability
	}
	d.res.Sets = append(d.res.Sets, s)
	return nil
}

func resolveRef(base, ref string) string {
	if ref == "" {
		return ""
	}
	bu, _ := url.Parse(base)
	return resolve(bu, ref)
}

// noteSD records a Source Description linked from a Capability List when
// none was fetched.
func (d *discoverer) noteSD(u string) {
	if d.res.SourceDescription == "" && u != "" {
		d.res.SourceDescription = u
	}
}

func (s *Set) link(rel string) string {
	for _, l := range s.Links {
		if l.Rel == rel {
			return resolveRef(s.CapabilityList, l.Href)
		}
	}
	return ""
}

// description reads a Source Description (or an index of them) and the
// Capability Lists it names.
func (d *discoverer) description(ctx context.Context, doc *Doc) error {
	if d.res.SourceDescription == "" {
		d.res.SourceDescription = doc.Requested
	}
	var lists []string
	sdURL := doc.URL
	isIndex := doc.Head.IsIndex()
	locs, err := entryLocs(doc, func(e *rs.Entry) bool {
		// Items of a description name Capability Lists; when rs:md is
		// present it must say so (RS-SD-3).
		return isIndex || e.MD.Capability == "" || e.MD.Capability == rs.CapCapabilityList
	})
	if err != nil {
		return err
	}
	if isIndex {
		// A Source Description Index: one level of component descriptions.
		for _, u := range locs {
			sd, err := d.g.Open(ctx, u)
			if err != nil {
				return fmt.Errorf("source description %s (listed in %s): %w", u, sdURL, err)
			}
			if sd.Capability() != rs.CapDescription || sd.Head.IsIndex() {
				sd.Close()
				return fmt.Errorf("%s (listed in %s): %w: capability %q, want a description", u, sdURL, ErrNotResourceSync, sd.Capability())
			}
			more, err := entryLocs(sd, func(e *rs.Entry) bool {
				return e.MD.Capability == "" || e.MD.Capability == rs.CapCapabilityList
			})
			if err != nil {
				return err
			}
			lists = append(lists, more...)
		}
	} else {
		lists = locs
	}
	for _, u := range lists {
		if d.seen[u] {
			continue
		}
		if len(d.res.Sets) >= maxSets {
			return fmt.Errorf("source description %s: more than %d capability lists", sdURL, maxSets)
		}
		d.seen[u] = true
		cl, err := d.g.Open(ctx, u)
		if err != nil {
			return fmt.Errorf("capability list %s (listed in %s): %w", u, sdURL, err)
		}
		if cl.Capability() != rs.CapCapabilityList {
			cl.Close()
			return fmt.Errorf("%s (listed in %s): capability %q, want a capability list", u, sdURL, cl.Capability())
		}
		s, err := d.capabilityList(cl)
		if err != nil {
			return err
		}
		d.res.Sets = append(d.res.Sets, s)
	}
	if len(d.res.Sets) == 0 {
		d.tried(doc.Requested, errors.New("source description lists no capability list"))
	}
	return nil
}

// entryLocs reads the locs of a document's entries that keep accepts,
// resolved against the document's URL, and closes it.
func entryLocs(doc *Doc, keep func(*rs.Entry) bool) ([]string, error) {
	defer doc.Close()
	base, _ := url.Parse(doc.URL)
	var locs []string
	for {
		e, err := doc.Next()
		if err == io.EOF {
			return locs, nil
		}
		if err != nil {
			return nil, &DocumentError{URL: doc.URL, Err: err}
		}
		if !keep(e) {
			continue
		}
		if u := resolve(base, e.Loc); u != "" {
			locs = append(locs, u)
		}
		if len(locs) > maxSets {
			return nil, fmt.Errorf("%s: more than %d entries", doc.URL, maxSets)
		}
	}
}

// capabilityList reads what a Capability List offers and closes it.
func (d *discoverer) capabilityList(doc *Doc) (Set, error) {
	defer doc.Close()
	s := Set{CapabilityList: doc.Requested, Links: append([]rs.Link(nil), doc.Head.Links...)}
	base, _ := url.Parse(doc.URL)
	for {
		e, err := doc.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Set{}, fmt.Errorf("capability list %s: %w", doc.URL, &DocumentError{URL: doc.URL, Err: err})
		}
		loc := resolve(base, e.Loc)
		var field *string
		switch e.MD.Capability {
		case rs.CapResourceList:
			field = &s.ResourceList
		case rs.CapResourceDump:
			field = &s.ResourceDump
		case rs.CapChangeList:
			field = &s.ChangeList
		case rs.CapChangeDump:
			field = &s.ChangeDump
		case rs.CapResourceListArchive:
			field = &s.ResourceListArchive
		case rs.CapChangeListArchive:
			field = &s.ChangeListArchive
		case rs.CapResourceDumpArchive:
			field = &s.ResourceDumpArchive
		case rs.CapChangeDumpArchive:
			field = &s.ChangeDumpArchive
		case rs.CapChangeNotification, "changelist-notification": // CN 1.0 name (RS-LEG-11)
			if s.ChangeNotification == "" {
				s.ChangeNotification = loc
				s.ChangeNotificationHub = resolve(base, e.Link(rs.RelHub))
			}
			continue
		default:
			continue
		}
		// Duplicates are forbidden (RS-CAP-2); the first one wins.
		if *field == "" {
			*field = loc
		}
	}
	// Links are kept as published except that hrefs are made absolute.
	for i := range s.Links {
		if h := resolve(base, s.Links[i].Href); h != "" {
			s.Links[i].Href = h
		}
	}
	return s, nil
}

// finish computes Base and the set names.
func (d *discoverer) finish() {
	d.res.Base = d.base()
	used := map[string]bool{}
	for i := range d.res.Sets {
		s := &d.res.Sets[i]
		name := setName(s.CapabilityList, s.Direct, s.Feed)
		n := name
		for k := 2; used[n]; k++ {
			n = name + "-" + strconv.Itoa(k)
		}
		used[n] = true
		s.Name = n
	}
}

func (d *discoverer) base() string {
	if sd := d.res.SourceDescription; sd != "" {
		if i := strings.Index(sd, "/"+WellKnownPath); i >= 0 && strings.HasSuffix(sd, "/"+WellKnownPath) {
			return sd[:i+1]
		}
	}
	for _, s := range d.res.Sets {
		if i := strings.Index(s.CapabilityList, "/.resourcesync/"); i >= 0 {
			return s.CapabilityList[:i+1]
		}
	}
	for _, u := range []string{d.res.SourceDescription, firstSetURL(d.res.Sets), d.res.Source} {
		if pu, err := url.Parse(u); err == nil && pu.Host != "" {
			return pu.Scheme + "://" + pu.Host + "/"
		}
	}
	return ""
}

func firstSetURL(sets []Set) string {
	for _, s := range sets {
		if s.CapabilityList != "" {
			return s.CapabilityList
		}
		if s.Direct != "" {
			return s.Direct
		}
		if s.Feed != "" {
			return s.Feed
		}
	}
	return ""
}

// genericNames are file names that say nothing about the set.
var genericNames = map[string]bool{
	"capabilitylist": true, "capability-list": true, "capabilities": true, "capability": true,
	"resourcelist": true, "resource-list": true, "changelist": true, "change-list": true,
	"resourcedump": true, "resource-dump": true, "changedump": true, "change-dump": true,
	"sitemap": true, "sitemapindex": true, "index": true, "resourcesync": true, ".resourcesync": true,
	"well-known": true, ".well-known": true,
}

// setName derives a name from a Capability List's URL (the <set> of
// BASE/.resourcesync/<set>/capabilitylist.xml), or from the path of the
// document given directly.
func setName(capList, direct, feed string) string {
	u := capList
	if u == "" {
		u = direct
	}
	if u == "" {
		u = feed
	}
	pu, err := url.Parse(u)
	if err != nil {
		return "default"
	}
	segs := strings.Split(strings.Trim(pu.EscapedPath(), "/"), "/")
	if n := len(segs); n >= 3 && segs[n-3] == ".resourcesync" {
		if s := sanitize(segs[n-2]); s != "" {
			return s
		}
	}
	for i := len(segs) - 1; i >= 0; i-- {
		seg, _ := url.PathUnescape(segs[i])
		if i == len(segs)-1 {
			seg = strings.TrimSuffix(seg, ".gz")
			if j := strings.LastIndexByte(seg, '.'); j > 0 {
				seg = seg[:j]
			}
		}
		if genericNames[strings.ToLower(seg)] {
			continue
		}
		if s := sanitize(seg); s != "" {
			return s
		}
	}
	return "default"
}

// sanitize keeps letters, digits, '.', '_' and '-', maps the rest to '_',
// and refuses names that start with '.' or say nothing.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	out := strings.TrimLeft(b.String(), ".")
	if strings.Trim(out, "_-.") == "" {
		return ""
	}
	return out
}
