package server

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare"
	"github.com/resourcesync-go/resourcesync/sdshare/atom"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// URL layout below the base URL B (see the package documentation):
//
//	B                                   overview feed
//	B NAME/                             collection feed
//	B NAME/snapshots                    snapshots feed
//	B NAME/snapshot/KEY[?format=F]      snapshot data
//	B NAME/snapshot/KEY/chunks          chunked snapshot feed
//	B NAME/snapshot/KEY/chunk/I[?format=F] chunk data
//	B NAME/fragments[?since=T][&page=P] fragments feed
//	B NAME/fragment?resource=IRI[&format=F] fragment data
//	B healthz, B metrics

// keyRE matches a version key: journal seq, '-', 12 hex digits.
var keyRE = regexp.MustCompile(`^[0-9]+-[0-9a-f]{12}$`)

// allOffers are the representations of RDF data, the default first.
var allOffers = []offer{
	{Type: "application/n-triples", Format: rdf.NTriples, Param: "nt"},
	{Type: "text/plain", Format: rdf.NTriples, Param: "txt"},
	{Type: "text/turtle", Format: rdf.Turtle, Param: "ttl"},
	{Type: "application/rdf+xml", Format: rdf.RDFXML, Param: "rdf"},
}

// offers returns the representations package rdf can write now.
func offers() []offer {
	var out []offer
	for _, o := range allOffers {
		if canWrite(o.Format) {
			out = append(out, o)
		}
	}
	return out
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.NoBulk {
		// B NAME/bulk, the one POST (bulk.go).
		if rest, ok := strings.CutPrefix(r.URL.Path, s.basePath); ok {
			if name, sub, _ := strings.Cut(rest, "/"); isBulk(sub) && s.byName[name] != nil {
				s.byName[name].serveBulk(w, r)
				return
			}
		}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, s.basePath)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if rest == "" {
		s.overview(w, r)
		return
	}
	switch rest {
	case "healthz":
		s.healthz(w, r)
		return
	case "metrics":
		s.metrics.handler.ServeHTTP(w, r)
		return
	}
	if s.rsWake != nil && s.serveRSDoc(w, r, rest) {
		return
	}
	name, sub, _ := strings.Cut(rest, "/")
	c := s.byName[name]
	if c == nil {
		http.NotFound(w, r)
		return
	}
	switch {
	case sub == "":
		c.collectionFeed(w, r)
	case sub == "snapshots":
		c.snapshotsFeed(w, r)
	case sub == "fragments":
		c.fragmentsFeed(w, r)
	case sub == "fragment":
		c.fragmentData(w, r)
	case s.rsWake != nil && strings.HasPrefix(sub, "rs/"):
		// The escaped form: an IRI may hold %2F or %3F.
		esc, _ := strings.CutPrefix(r.URL.EscapedPath(), s.basePath+url.PathEscape(name)+"/rs/")
		c.serveRSResource(w, r, esc)
	case strings.HasPrefix(sub, "snapshot/"):
		c.snapshotPath(w, r, strings.TrimPrefix(sub, "snapshot/"))
	default:
		http.NotFound(w, r)
	}
}

// selfURL is the public URL of r.
func (s *Server) selfURL(r *http.Request) string {
	u := strings.TrimSuffix(s.base, s.basePath) + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	return u
}

func (s *Server) writeFeed(w http.ResponseWriter, r *http.Request, f *atom.Feed) {
	f.Author = s.cfg.Author
	f.Links = append([]atom.Link{{Rel: "self", Type: sdshare.AtomType, Href: s.selfURL(r)}}, f.Links...)
	// A browser's navigation gets the feed as a page, from the same URL
	// (view.go); every other client the Atom, unchanged, whatever its
	// Accept names (web.WantsHTML).
	web.Vary(w.Header())
	if web.WantsHTML(r) {
		s.writeFeedHTML(w, r, f)
		return
	}
	var b bytes.Buffer
	if err := atom.Encode(&b, f); err != nil {
		s.log.Error("feed not encoded", "url", r.URL.String(), "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", sdshare.AtomType+"; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	if r.Method != http.MethodHead {
		w.Write(b.Bytes())
	}
}

// pair returns an SDShare link and its alternate duplicate (SD-SRV-6).
func pair(rel, typ, href string) []atom.Link {
	return []atom.Link{{Rel: rel, Type: typ, Href: href}, {Rel: "alternate", Type: typ, Href: href}}
}

// dataLinks returns one link pair per offered representation of href.
func (s *Server) dataLinks(rel, href string) []atom.Link {
	sep := "?"
	if strings.Contains(href, "?") {
		sep = "&"
	}
	var out []atom.Link
	for _, o := range s.offers {
		out = append(out, pair(rel, o.Type, href+sep+"format="+o.Param)...)
	}
	return out
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	f := &atom.Feed{ID: s.base, Title: "SDShare collections"}
	for _, c := range s.cols {
		v := c.version()
		if v.updated.After(f.Updated) {
			f.Updated = v.updated
		}
		f.Entries = append(f.Entries, atom.Entry{
			ID: c.URL(), Title: c.name, Updated: v.updated,
			Links: pair(sdshare.RelCollectionFeed, sdshare.AtomType, c.URL()),
		})
	}
	s.writeFeed(w, r, f)
}

func (c *Collection) collectionFeed(w http.ResponseWriter, r *http.Request) {
	v := c.version()
	u := c.URL()
	c.srv.writeFeed(w, r, &atom.Feed{ID: u, Title: "Collection " + c.name, Updated: v.updated, Entries: []atom.Entry{
		{ID: u + "snapshots", Title: "Snapshots of " + c.name, Updated: v.updated,
			Links: pair(sdshare.RelSnapshotsFeed, sdshare.AtomType, u+"snapshots")},
		{ID: u + "fragments", Title: "Fragments of " + c.name, Updated: v.updated,
			Links: pair(sdshare.RelFragmentsFeed, sdshare.AtomType, u+"fragments")},
	}})
}

func (c *Collection) snapshotsFeed(w http.ResponseWriter, r *http.Request) {
	v := c.version()
	u := c.URL()
	href := u + "snapshot/" + v.key
	e := atom.Entry{ID: href, Title: fmt.Sprintf("Snapshot of %s (%d triples)", c.name, v.gf.triples), Updated: v.updated,
		Links: c.srv.dataLinks(sdshare.RelSnapshot, href)}
	if c.chunks(v) > 0 {
		e.Links = append(e.Links, pair(sdshare.RelChunkedSnapshot, sdshare.AtomType, href+"/chunks")...)
	}
	c.srv.writeFeed(w, r, &atom.Feed{ID: u + "snapshots", Title: "Snapshots of " + c.name, Updated: v.updated, Entries: []atom.Entry{e}})
}

// snapshotPath serves KEY, KEY/chunks and KEY/chunk/I.
func (c *Collection) snapshotPath(w http.ResponseWriter, r *http.Request, p string) {
	key, sub, _ := strings.Cut(p, "/")
	if !keyRE.MatchString(key) {
		// Keys name files: nothing but digits, '-' and hex reaches the
		// file system.
		http.NotFound(w, r)
		return
	}
	v := c.version()
	if !c.snapshotReady(key) {
		if be := c.buildErr.Load(); be != nil && be.key == key {
			http.Error(w, "the snapshot could not be written; see the server log", http.StatusInternalServerError)
			return
		}
		if key == v.key {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "the snapshot is being built; retry shortly", http.StatusAccepted)
			return
		}
		http.Error(w, "no such snapshot (superseded by a newer one; see the snapshots feed)", http.StatusNotFound)
		return
	}
	switch {
	case sub == "":
		c.srv.serveFile(w, r, c.snapFile(key))
	case sub == "chunks":
		n, updated := c.chunks(v), v.updated
		if key != v.key {
			// A client that read the snapshots feed just before a change
			// still gets the snapshot it was offered while its files
			// last: its chunks are counted on disk (written before the
			// snapshot file that makes it ready).
			n, updated = c.chunksOnDisk(key)
		}
		if n == 0 {
			http.NotFound(w, r)
			return
		}
		u := c.URL() + "snapshot/" + key
		f := &atom.Feed{ID: u + "/chunks", Title: fmt.Sprintf("Chunks of the snapshot of %s", c.name), Updated: updated}
		for i := range n {
			href := fmt.Sprintf("%s/chunk/%d", u, i)
			f.Entries = append(f.Entries, atom.Entry{ID: href, Title: fmt.Sprintf("Chunk %d of %d", i+1, n),
				Updated: updated, Links: c.srv.dataLinks(sdshare.RelSnapshotComponent, href)})
		}
		c.srv.writeFeed(w, r, f)
	case strings.HasPrefix(sub, "chunk/"):
		i, err := strconv.Atoi(strings.TrimPrefix(sub, "chunk/"))
		if err != nil || i < 0 {
			http.NotFound(w, r)
			return
		}
		c.srv.serveFile(w, r, c.chunkFile(key, i))
	default:
		http.NotFound(w, r)
	}
}

// pick chooses the representation of a data request: ?format= narrows the
// offers to one, Accept chooses among them (SD-SRV-31); false means the
// answer (400 or 406) was written.
func (s *Server) pick(w http.ResponseWriter, r *http.Request) (offer, bool) {
	w.Header().Add("Vary", "Accept")
	offs := s.offers
	if p := r.URL.Query().Get("format"); p != "" {
		i := slices.IndexFunc(offs, func(o offer) bool { return o.Param == p })
		if i < 0 {
			http.Error(w, fmt.Sprintf("unknown format %q; one of: %s", p, s.offerList("param")), http.StatusBadRequest)
			return offer{}, false
		}
		offs = offs[i : i+1]
	}
	o, mt, ok := negotiate(r.Header.Get("Accept"), offs)
	if !ok {
		http.Error(w, "none of the acceptable types is available; available: "+s.offerList("type"), http.StatusNotAcceptable)
		return offer{}, false
	}
	w.Header().Set("Content-Type", mt+"; charset=utf-8")
	return o, true
}

func (s *Server) offerList(what string) string {
	var l []string
	for _, o := range s.offers {
		if what == "param" {
			l = append(l, o.Param)
		} else {
			l = append(l, o.Type)
		}
	}
	return strings.Join(l, ", ")
}

// serveFile serves an N-Triples file in the negotiated format: as is
// (with Range and HEAD) for N-Triples, converted while streaming otherwise.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, name string) {
	o, ok := s.pick(w, r)
	if !ok {
		return
	}
	f, err := os.Open(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			http.NotFound(w, r)
			return
		}
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	defer f.Close()
	if o.Format == rdf.NTriples {
		fi, err := f.Stat()
		if err != nil {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		http.ServeContent(w, r, "", fi.ModTime(), f)
		return
	}
	if r.Method == http.MethodHead {
		return
	}
	var parseErr error
	seq := func(yield func(rdf.Triple) bool) {
		for t, err := range rdf.Parse(f, rdf.NTriples, "") {
			if err != nil {
				parseErr = err
				return
			}
			if !yield(t) {
				return
			}
		}
	}
	if err := writeTriples(w, o.Format, seq); err != nil || parseErr != nil {
		s.log.Error("snapshot not converted", "file", name, "err", errors.Join(err, parseErr))
	}
}

func (c *Collection) fragmentData(w http.ResponseWriter, r *http.Request) {
	res := r.URL.Query().Get("resource")
	if res == "" {
		http.Error(w, "missing resource parameter", http.StatusBadRequest)
		return
	}
	o, ok := c.srv.pick(w, r)
	if !ok {
		return
	}
	b, err := c.fragment(res, o.Format)
	if err != nil {
		c.srv.log.Error("fragment not written", "collection", c.name, "resource", res, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	if r.Method != http.MethodHead {
		w.Write(b)
	}
}

// parseSince reads a since value: RFC 3339 with any offset and fraction.
// A '+' that arrived unescaped (and so was decoded as a space) is
// restored.
func parseSince(v string) (time.Time, error) {
	v = strings.ReplaceAll(strings.TrimSpace(v), " ", "+")
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		// RFC 3339 allows a lower-case t and z.
		t, err = time.Parse(time.RFC3339Nano, strings.ToUpper(v))
	}
	return t, err
}

// The page cursor is opaque to clients: "s" and the journal seq of the
// first entry of the page, in base 36.
func pageCursor(seq uint64) string { return "s" + strconv.FormatUint(seq, 36) }

func parseCursor(p string) (uint64, bool) {
	s, ok := strings.CutPrefix(p, "s")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 36, 64)
	return n, err == nil && n > 0
}

func (c *Collection) fragmentsFeed(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var since time.Time
	if v := q.Get("since"); v != "" || q.Has("since") {
		t, err := parseSince(v)
		if err != nil {
			http.Error(w, fmt.Sprintf("since must be an RFC 3339 date-time: %v", err), http.StatusBadRequest)
			return
		}
		since = t
	}
	var from uint64
	if p := q.Get("page"); p != "" {
		n, ok := parseCursor(p)
		if !ok {
			http.Error(w, "malformed page cursor", http.StatusBadRequest)
			return
		}
		from = n
	}
	ctx := r.Context()
	v := c.acquire()
	defer c.release(v)
	size := c.srv.cfg.PageSize
	u := c.URL()
	f := &atom.Feed{ID: u + "fragments", Title: "Fragments of " + c.name, Updated: v.updated}
	var journal func(yield func(store.Change, error) bool)
	switch {
	case from > 0:
		journal = c.st.Journal(ctx, from)
	case !since.IsZero():
		journal = c.st.JournalBetween(ctx, since, time.Time{})
	default:
		journal = c.st.Journal(ctx, 1)
	}
	base, _, _ := store.BaselineTime(ctx, c.st)
	var next uint64
	for ch, err := range journal {
		if err != nil {
			c.srv.log.Error("journal not read", "collection", c.name, "err", err)
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		if !since.IsZero() && ch.Time.Before(since) {
			continue
		}
		if ch.Seq > v.seq {
			break // newer than the graph this request sees
		}
		if len(f.Entries) == size {
			next = ch.Seq
			break
		}
		iri := ch.Path()
		title := labelOf(v, iri)
		if title == "" {
			title = iri
		}
		f.Entries = append(f.Entries, atom.Entry{
			ID:        fmt.Sprintf("%schanges/%d.%d", u, base.UnixNano(), ch.Seq),
			Title:     title,
			Updated:   ch.Time,
			Summary:   string(ch.Kind),
			Links:     c.srv.dataLinks(sdshare.RelFragment, u+"fragment?resource="+url.QueryEscape(iri)),
			Resources: []string{iri},
		})
	}
	if next > 0 {
		nq := url.Values{}
		if s := q.Get("since"); s != "" {
			nq.Set("since", strings.ReplaceAll(s, " ", "+"))
		}
		nq.Set("page", pageCursor(next))
		f.Links = append(f.Links, atom.Link{Rel: "next", Type: sdshare.AtomType, Href: u + "fragments?" + nq.Encode()})
	}
	c.bulkLink(w.Header())
	c.srv.writeFeed(w, r, f)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	for _, c := range s.cols {
		v := c.version()
		// What failed and where is in the server's log only: a parse
		// error quotes the file's content and path.
		var problems []string
		if c.LastError() != nil {
			problems = append(problems, "the last reload failed, serving the last good graph")
		}
		if n := c.refused.Load(); n > 0 {
			problems = append(problems, fmt.Sprintf("%d files not published (symbolic links or not regular files)", n))
		}
		if v.overBudget > 0 {
			problems = append(problems, fmt.Sprintf("%d fragments beyond the canonical labelling budget, served with their blank node labels as loaded", v.overBudget))
		}
		state := "ok"
		if len(problems) > 0 {
			state = "degraded: " + strings.Join(problems, "; ") + "; see the server's log"
		}
		fmt.Fprintf(&b, "%s: %d resources, %d triples, version %s, %s\n", c.name, v.gf.resources, v.gf.triples, v.key, state)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte(b.String()))
}
