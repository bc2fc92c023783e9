package server

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/internal/web/docview"
)

// serveDocHTML answers a browser's navigation to the XML document f (at
// rel below the base URL; web.WantsHTML) with its HTML view (package
// docview), one page of entries at a time (?page=N). The view is a
// function of the document's bytes: it carries the document's
// Last-Modified and answers If-Modified-Since with 304 like the XML; both
// representations carry the same Vary (web.VaryHTML), so a cache never
// hands one to a client that asked for the other.
func (h *Handler) serveDocHTML(w http.ResponseWriter, r *http.Request, rel string, page int, f io.Reader, mod time.Time) {
	hd := w.Header()
	web.SetHeaders(hd)
	hd.Set("Cache-Control", "no-cache")
	if !mod.IsZero() && mod.Unix() > 0 {
		hd.Set("Last-Modified", mod.UTC().Format(http.TimeFormat))
		if notModified(r, mod) {
			hd.Del("Content-Type")
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	release, ok := web.Acquire(w, r) // bounded: see web.Slots
	if !ok {
		return
	}
	defer release()
	mount := h.Mount
	if mount == "" {
		mount = "/"
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	self := scheme + "://" + r.Host + mount + rel
	o := docview.Options{
		Self: self,
		Page: page,
		Open: func(href string) (io.ReadCloser, error) { return h.openDocURL(mount, href) },
	}
	if _, err := docview.Render(w, f, o); err != nil {
		h.log().Debug("server: HTML view not completed", "doc", rel, "err", err)
	}
}

// serveCompanion answers the URL of an HTML companion that publish writes
// for static hosting (NAME.html, NAME.N.html for page N, and
// .well-known/resourcesync.html; see source/publish) when the tree has
// none (serve writes none): with the HTML view of its document, to every
// client, as the static file would be. It reports whether rel named a
// companion of a document.
func (h *Handler) serveCompanion(w http.ResponseWriter, r *http.Request, rel string) bool {
	base, ok := strings.CutSuffix(rel, ".html")
	if !ok {
		return false
	}
	type cand struct {
		doc  string
		page int
	}
	var cands []cand
	switch {
	case base == ".well-known/resourcesync":
		cands = []cand{{base, 1}}
	case strings.HasPrefix(base, ".resourcesync/"):
		cands = []cand{{base + ".xml", 1}}
		if i := strings.LastIndexByte(base, '.'); i > 0 {
			if n, err := strconv.Atoi(base[i+1:]); err == nil && n > 1 {
				cands = append(cands, cand{base[:i] + ".xml", n})
			}
		}
	}
	for _, c := range cands {
		f, gz, err := h.openDoc(c.doc)
		if err != nil {
			continue
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			body, err := docReader(f, gz)
			if err != nil {
				continue
			}
			h.serveDocHTML(w, r, c.doc, c.page, body, fi.ModTime())
			return true
		}
	}
	return false
}

// notModified reports whether the request's If-Modified-Since (and no
// If-None-Match, which the view does not answer) covers mod.
func notModified(r *http.Request, mod time.Time) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead || r.Header.Get("If-None-Match") != "" {
		return false
	}
	t, err := http.ParseTime(r.Header.Get("If-Modified-Since"))
	if err != nil {
		return false
	}
	return !mod.Truncate(time.Second).After(t)
}

var errNotDoc = errors.New("not a document of this Source")

// openDocURL opens the document an absolute URL names, by its path below
// the mount (the host is not compared: a Source behind a proxy publishes
// its public URLs), for the view's breadcrumbs.
func (h *Handler) openDocURL(mount, href string) (io.ReadCloser, error) {
	u, err := url.Parse(href)
	if err != nil || u.RawQuery != "" {
		return nil, errNotDoc
	}
	p := u.EscapedPath()
	if !strings.HasPrefix(p, mount) {
		return nil, errNotDoc
	}
	rel := p[len(mount):]
	if !IsDocumentPath(rel) || rel == "robots.txt" || strings.HasSuffix(rel, ".zip") || strings.HasSuffix(rel, ".html") {
		return nil, errNotDoc
	}
	f, gz, err := h.openDoc(rel)
	if err != nil {
		return nil, err
	}
	return docReadCloser(f, gz)
}

// serveDumpManifestHTML answers a browser's navigation to the manifest of
// a dump package produced on demand (no file in Docs; Handler.Dumps) with
// its HTML view, as serveDoc does for a written manifest. It reports
// whether Dumps knew rel.
func (h *Handler) serveDumpManifestHTML(w http.ResponseWriter, r *http.Request, rel string) bool {
	r2 := r.Clone(r.Context())
	r2.Method = http.MethodGet
	for _, k := range []string{"Range", "If-Range", "If-Modified-Since", "If-None-Match"} {
		r2.Header.Del(k)
	}
	var rec manifestRecorder
	rec.code = http.StatusOK
	if !h.Dumps(&rec, r2, rel) {
		return false
	}
	if rec.code != http.StatusOK {
		// 404 for a package no longer current: its text as the dump said.
		web.SetHeaders(w.Header())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(rec.code)
		w.Write(rec.body.Bytes())
		return true
	}
	mod, _ := http.ParseTime(rec.hdr.Get("Last-Modified"))
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	web.Vary(w.Header())
	h.serveDocHTML(w, r, rel, page, &rec.body, mod)
	return true
}

// manifestRecorder keeps what Dumps answers for a manifest (a document of
// at most one package's entries) to render it.
type manifestRecorder struct {
	hdr  http.Header
	code int
	body bytes.Buffer
}

func (m *manifestRecorder) Header() http.Header {
	if m.hdr == nil {
		m.hdr = http.Header{}
	}
	return m.hdr
}
func (m *manifestRecorder) WriteHeader(code int)        { m.code = code }
func (m *manifestRecorder) Write(p []byte) (int, error) { return m.body.Write(p) }
