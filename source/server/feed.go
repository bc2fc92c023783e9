package server

import (
	"bytes"
	"mime"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/resourcesync-go/resourcesync/feed"
	"github.com/resourcesync-go/resourcesync/feed/activity"
	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/rdf"
)

// Cache lifetimes of the feed documents: a full page never changes; the
// last page, the collection and the stream document change with every
// update.
const (
	feedImmutable = "public, max-age=31536000, immutable"
	feedGrowing   = "public, max-age=5"
)

// feedDoc reports whether rel (relative to the base URL) is a document of
// a set's change feeds (.resourcesync/SET/feed/NAME, see publish.FeedDir)
// and returns NAME.
func feedDoc(rel string) (name string, ok bool) {
	rest, ok := strings.CutPrefix(rel, ".resourcesync/")
	if !ok {
		return "", false
	}
	set, name, ok := strings.Cut(rest, "/feed/")
	if !ok || set == "" || strings.Contains(set, "/") || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// pageNumber returns N of "page-N.json" or "ldes-N.ttl"/".jsonld".
func pageNumber(name string) (int64, bool) {
	base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, ".json"), ".ttl"), ".jsonld")
	for _, p := range []string{"page-", "ldes-", "seg-"} {
		if s, ok := strings.CutPrefix(base, p); ok {
			n, err := strconv.ParseInt(s, 10, 64)
			return n, err == nil && n >= 0
		}
	}
	return 0, false
}

// nextFile names the document after name in its sequence (page N+1 for a
// page or LDES node, segment N+1 for a segment): publish writes it only
// once name is complete, and never rewrites name then.
func nextFile(name string, n int64) string {
	if strings.HasPrefix(name, "seg-") {
		return feed.SegmentFile(n + 1)
	}
	return feed.PageFile(n + 1)
}

// ldesFormat picks the representation of an LDES document for an Accept
// header: Turtle (the default, and what */* gets), JSON-LD or N-Triples,
// by the highest quality named; ties go to Turtle, then JSON-LD.
func ldesFormat(accept string) string {
	best, bestQ := feed.Turtle, -1.0
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if s, ok := params["q"]; ok {
			if v, err := strconv.ParseFloat(s, 64); err == nil {
				q = v
			}
		}
		switch mt {
		case "text/turtle", "application/ld+json", "application/n-triples":
		default:
			continue
		}
		if q > bestQ || q == bestQ && rank(mt) < rank(best) {
			best, bestQ = mt, q
		}
	}
	if bestQ == 0 {
		return feed.Turtle
	}
	return best
}

func rank(mt string) int {
	switch mt {
	case feed.Turtle:
		return 0
	case feed.JSONLD:
		return 1
	}
	return 2
}

// serveFeed answers a feed document: Change Discovery JSON with its
// Activity Streams media type, LDES documents by content negotiation
// (their IRI is the Turtle file's URL; the JSON-LD beside it, or
// N-Triples converted from the Turtle, for a client that asks), CORS open
// to every origin (IIIF consumers run in browsers), and a Cache-Control
// that says a full page is immutable. A browser's navigation gets the
// readable view (web.WantsHTML). It reports whether rel was one.
func (h *Handler) serveFeed(w http.ResponseWriter, r *http.Request, rel string) bool {
	name, ok := feedDoc(rel)
	if !ok || strings.HasPrefix(name, ".") {
		return false
	}
	dir := path.Dir(rel) + "/"
	w.Header().Set("Access-Control-Allow-Origin", "*")
	file, ctype := name, ""
	switch {
	case strings.HasSuffix(name, ".json"):
		ctype = activity.MediaType
		// IIIF Change Discovery 1.0 §4.1 names its own profile: a client
		// that asks for it gets it (the bytes are the same).
		if strings.Contains(r.Header.Get("Accept"), activity.DiscoveryContext) {
			ctype = `application/ld+json;profile="` + activity.DiscoveryContext + `"`
		}
	case strings.HasSuffix(name, ".ttl"):
		ctype = ldesFormat(r.Header.Get("Accept"))
		switch r.URL.Query().Get("format") { // a link's choice (the HTML view's)
		case "jsonld":
			ctype = feed.JSONLD
		case "ttl":
			ctype = feed.Turtle
		case "nt":
			ctype = "application/n-triples"
		}
	default:
		return false
	}
	if web.WantsHTML(r) {
		web.Vary(w.Header())
		return h.serveFeedHTML(w, r, dir, name)
	}
	web.Vary(w.Header())
	f, err := openInside(h.Docs, dir+file)
	if err != nil {
		http.NotFound(w, r)
		return true
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		http.NotFound(w, r)
		return true
	}
	// A page is full once the page after it exists (nextFile).
	cc := feedGrowing
	if n, ok := pageNumber(name); ok {
		if g, err := openInside(h.Docs, dir+nextFile(name, n)); err == nil {
			g.Close()
			cc = feedImmutable
		}
	}
	w.Header().Set("Cache-Control", cc)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if strings.HasSuffix(name, ".ttl") && ctype != feed.Turtle {
		h.serveConverted(w, r, f, dir+file, ctype)
		return true
	}
	w.Header().Set("Content-Type", ctype)
	http.ServeContent(w, r, "", fi.ModTime(), f)
	return true
}

// serveConverted answers an LDES document in JSON-LD or N-Triples,
// converted from its Turtle file: a page is at most PageSize members, so
// it is converted whole.
func (h *Handler) serveConverted(w http.ResponseWriter, r *http.Request, f *os.File, rel, ctype string) {
	var out bytes.Buffer
	base := "http://" + r.Host + h.mountOr() + rel // @base in the file makes this unused for our documents
	var err error
	if ctype == feed.JSONLD {
		err = feed.ToJSONLD(&out, f, base)
	} else {
		nw, _ := rdf.NewWriter(&out, rdf.NTriples)
		for tr, perr := range rdf.Parse(f, rdf.Turtle, base) {
			if perr != nil {
				err = perr
				break
			}
			nw.Write(tr)
		}
		nw.Close()
	}
	if err != nil {
		h.log().Error("server: feed document does not parse", "doc", rel, "err", err)
		http.Error(w, "feed document unreadable", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", strconv.Itoa(out.Len()))
	if r.Method != http.MethodHead {
		w.Write(out.Bytes())
	}
}

func (h *Handler) mountOr() string {
	if h.Mount == "" {
		return "/"
	}
	return h.Mount
}
