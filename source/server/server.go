package server

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/storage"
)

// Set is one set of resources served by a Handler.
type Set struct {
	// Prefix is the URL path under which the set's resources are served,
	// starting and ending with "/" (e.g. "/" or "/photos/").
	Prefix string
	Dir    string
	// Content, if set, is the collection instead of Dir (a bucket read
	// through storage.Content): resources are streamed from it.
	Content storage.Content
	Store   store.Store
	// CapabilityList is the absolute URL sent in the Link header.
	CapabilityList string
}

// Handler serves documents from Docs and resources from Sets.
type Handler struct {
	// Docs is the root of the published document tree.
	Docs string
	// Mount is the URL path of the Source's base URL ("/" or "/x/").
	Mount string
	Sets  []Set
	// Extra handlers mounted under the base URL, by path relative to it
	// (e.g. "hub" for an embedded WebSub hub); consulted first.
	Extra map[string]http.Handler
	// Status, when set, answers GET and HEAD of the document tree's root
	// (BASE/.resourcesync/): the Source's status page. The bare
	// BASE/.resourcesync redirects there. Without it both are 404.
	Status http.Handler
	// SandboxResources sends "Content-Security-Policy: sandbox" with every
	// resource: a browser then gives a resource page (an HTML file of the
	// collection) an opaque origin of its own, so that its script cannot
	// act on pages of the Source's origin, the embedded hub's admin pages
	// among them (serve --hub-admin-token sets it).
	SandboxResources bool
	Logger           *slog.Logger
	// Dumps, if set, answers a document path that is no file in Docs: the
	// dump packages produced on demand (publish.Dumps.Serve). It reports
	// whether it answered.
	Dumps func(w http.ResponseWriter, r *http.Request, rel string) bool
	// RetryAfter is sent with the 503 answer for a resource whose file
	// changed since the last scan; default 10s.
	RetryAfter time.Duration
	// NoBulk turns the bulk GET off (bulk.go): no endpoint, no Link
	// header advertising it.
	NoBulk bool
}

func (h *Handler) log() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

// IsDocumentPath reports whether rel (relative to the base URL, no
// leading slash) names a published document rather than a resource.
func IsDocumentPath(rel string) bool {
	return rel == ".well-known/resourcesync" || rel == "robots.txt" || strings.HasPrefix(rel, ".resourcesync/")
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.isBulk(r) {
		h.serveBulk(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if hh := h.extra(r); hh != nil {
			hh.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if hh := h.extra(r); hh != nil {
		hh.ServeHTTP(w, r)
		return
	}
	mount := h.Mount
	if mount == "" {
		mount = "/"
	}
	p := r.URL.EscapedPath()
	if p == strings.TrimSuffix(mount, "/") {
		p = mount
	}
	if !strings.HasPrefix(p, mount) {
		http.NotFound(w, r)
		return
	}
	rel := p[len(mount):]
	switch rel {
	case "":
		h.serveRoot(w, r, mount)
		return
	case ".resourcesync/":
		if h.Status != nil {
			h.Status.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
		return
	case ".resourcesync":
		if h.Status != nil {
			http.Redirect(w, r, mount+".resourcesync/", http.StatusMovedPermanently)
			return
		}
	}
	if IsDocumentPath(rel) || rel == ".well-known/resourcesync.html" {
		h.serveDoc(w, r, rel)
		return
	}
	h.serveResource(w, r, p) // Set.Prefix includes the mount
}

// serveRoot answers the base URL itself, which no document or resource
// is: DIR's index.html when the set served there has one (as any web
// server's directory index; with a Link header to the Source Description
// instead of a resource's to its set's Capability List, so that discovery
// from the base URL goes to the Source Description, which names every
// set, whatever the page links to). Without
// one, a browser's navigation (web.WantsHTML) is sent to the status page
// (or to the Source Description's page when there is none); every other
// client gets 404 with a line naming the Source Description: the base
// URL is not a resource to mirror, and a ResourceSync client that is
// given it looks at BASE/.well-known/resourcesync next.
func (h *Handler) serveRoot(w http.ResponseWriter, r *http.Request, mount string) {
	if h.has(r, mount+"index.html") {
		// The page is the publisher's: a <link rel="resourcesync"> in it
		// (a copied site's, a stale one) must not lead discovery from the
		// base URL elsewhere. The Link header, read first, names the
		// Source Description.
		w.Header().Add("Link", "<"+mount+`.well-known/resourcesync>; rel="resourcesync"`)
		h.serveResourceLink(w, r, mount+"index.html", false)
		return
	}
	web.Vary(w.Header())
	if web.WantsHTML(r) {
		to := mount + ".well-known/resourcesync"
		if h.Status != nil {
			to = mount + ".resourcesync/"
		}
		http.Redirect(w, r, to, http.StatusFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusNotFound)
	if r.Method != http.MethodHead {
		io.WriteString(w, "404 not found: this is the base URL of a ResourceSync Source, not a resource; its Source Description is at "+mount+".well-known/resourcesync\n")
	}
}

// setOf returns the set whose prefix is the longest that the escaped
// path starts with, or nil.
func (h *Handler) setOf(escaped string) *Set {
	var set *Set
	for i := range h.Sets {
		s := &h.Sets[i]
		if strings.HasPrefix(escaped, s.Prefix) && (set == nil || len(s.Prefix) > len(set.Prefix)) {
			set = s
		}
	}
	return set
}

// has reports whether the escaped path names a resource in the
// inventory.
func (h *Handler) has(r *http.Request, escaped string) bool {
	set := h.setOf(escaped)
	if set == nil {
		return false
	}
	rel, err := scan.UnescapePath(escaped[len(set.Prefix):])
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), lookupTimeout)
	defer cancel()
	_, err = set.Store.Get(ctx, rel)
	return err == nil
}

func (h *Handler) extra(r *http.Request) http.Handler {
	if len(h.Extra) == 0 {
		return nil
	}
	mount := h.Mount
	if mount == "" {
		mount = "/"
	}
	rel := strings.TrimPrefix(r.URL.Path, mount)
	for k, hh := range h.Extra {
		if rel == k || strings.HasPrefix(rel, k+"/") {
			return hh
		}
	}
	return nil
}

func (h *Handler) serveDoc(w http.ResponseWriter, r *http.Request, rel string) {
	// rel is still escaped; documents have plain names, so an escaped
	// name is not one of them.
	if h.serveFeed(w, r, rel) {
		return
	}
	if strings.HasSuffix(rel, ".xml"+gzipSuffix) {
		// How a list is stored, not a URL publish gives: its URL is
		// NAME.xml.
		http.NotFound(w, r)
		return
	}
	f, gz, err := h.openDoc(rel)
	if err != nil {
		if errors.Is(err, ErrLink) {
			h.log().Warn("server: symbolic link in the document tree not followed", "err", err)
		} else if h.Dumps != nil && strings.HasSuffix(rel, ".manifest.xml") && web.WantsHTML(r) && h.serveDumpManifestHTML(w, r, rel) {
			return
		} else if h.Dumps != nil && h.Dumps(w, r, rel) {
			return
		} else if h.serveCompanion(w, r, rel) {
			return
		}
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	switch {
	case rel == "robots.txt" || strings.HasSuffix(rel, "/robots.txt"):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	case strings.HasSuffix(rel, ".zip"):
		w.Header().Set("Content-Type", "application/zip")
	case strings.HasSuffix(rel, ".html"):
		// A static companion that publish wrote beside its document.
		web.SetHeaders(w.Header())
	default:
		// One URL, two representations: the XML for every machine
		// client, byte for byte, and its HTML view for a browser.
		web.Vary(w.Header())
		if web.WantsHTML(r) {
			page, _ := strconv.Atoi(r.URL.Query().Get("page"))
			body, err := docReader(f, gz)
			if err != nil {
				h.log().Warn("server: compressed document not read", "doc", rel, "err", err)
				http.Error(w, "document unavailable", http.StatusInternalServerError)
				return
			}
			h.serveDocHTML(w, r, rel, page, body, fi.ModTime())
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		h.bulkLink(w.Header())
	}
	// Documents change in place (the open Change List, the Capability
	// List): let clients revalidate cheaply with If-Modified-Since.
	w.Header().Set("Cache-Control", "no-cache")
	if gz {
		h.serveGzipDoc(w, r, rel, f, fi)
		return
	}
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

func (h *Handler) serveResource(w http.ResponseWriter, r *http.Request, escaped string) {
	h.serveResourceLink(w, r, escaped, true)
}

// serveResourceLink serves the resource at the escaped path; link sends
// its set's Capability List in a Link header.
func (h *Handler) serveResourceLink(w http.ResponseWriter, r *http.Request, escaped string, link bool) {
	if h.SandboxResources {
		w.Header().Set("Content-Security-Policy", "sandbox")
	}
	set := h.setOf(escaped)
	if set == nil {
		http.NotFound(w, r)
		return
	}
	rel, err := unescape(escaped[len(set.Prefix):])
	if err != nil || rel == "" || strings.HasSuffix(rel, "/") {
		http.NotFound(w, r)
		return
	}
	lctx, cancel := context.WithTimeout(r.Context(), lookupTimeout)
	res, err := set.Store.Get(lctx, rel)
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil {
			h.log().Warn("inventory lookup timed out", "path", rel, "after", lookupTimeout)
			w.Header().Set("Retry-After", "5")
			http.Error(w, "state unavailable; retry later", http.StatusServiceUnavailable)
			return
		}
		if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, context.Canceled) {
			h.log().Error("inventory lookup failed", "path", rel, "err", err)
			http.Error(w, "state unavailable", http.StatusServiceUnavailable)
			return
		}
		http.NotFound(w, r)
		return
	}
	if !link {
		set = &Set{Prefix: set.Prefix, Dir: set.Dir, Content: set.Content, Store: set.Store} // no Link header
	}
	if set.Content != nil {
		h.serveContent(w, r, set, rel, &res)
		return
	}
	if !noFastPath && serveSmall(w, r, set.Dir, rel, &res, set) {
		return
	}
	f, err := openInside(set.Dir, rel)
	switch {
	case errors.Is(err, ErrLink):
		h.log().Warn("server: symbolic link not followed; resource not served", "path", rel, "err", err)
		h.unavailable(w)
		return
	case err != nil:
		http.NotFound(w, r) // gone (the next scan records the deletion) or unreadable
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		h.log().Warn("server: resource is no longer a regular file; not served until rescanned", "path", rel)
		h.unavailable(w)
		return
	}
	// Serve only the file that was scanned: a file replaced since (other
	// inode, size or mtime) may be anything (a hard link to a file outside
	// the directory, bytes not yet hashed), and its bytes would not match
	// the inventory's hashes that the lists publish anyway.
	if !sameAsScanned(fi, &res) {
		h.log().Warn("server: resource changed since the last scan; not served until rescanned", "path", rel)
		h.unavailable(w)
		return
	}
	hd := w.Header()
	if res.Type != "" {
		hd.Set("Content-Type", res.Type)
	} else {
		hd.Set("Content-Type", "application/octet-stream")
	}
	if set.CapabilityList != "" {
		hd.Set("Link", "<"+set.CapabilityList+`>; rel="resourcesync"`)
	}
	hd.Set("ETag", etag(&res))
	http.ServeContent(w, r, "", res.LastMod, f)
}

// noFastPath makes every resource take the general path (for tests).
var noFastPath bool

// etag is a resource's entity tag: its sha-256 (built in one allocation).
func etag(res *store.Resource) string {
	var b [2 + 2*len(res.SHA256)]byte
	b[0], b[len(b)-1] = '"', '"'
	hex.Encode(b[1:len(b)-1], res.SHA256[:])
	return string(b[:])
}

// unescape is scan.UnescapePath without its allocations for a path with
// nothing escaped (the common case), which it returns as it is.
func unescape(escaped string) (string, error) {
	if !strings.Contains(escaped, "%") {
		return escaped, nil
	}
	return scan.UnescapePath(escaped)
}

// descends is splitRel's check without its allocation: no empty, "." or
// ".." segment, no NUL, no OS separator in a segment.
func descends(rel string) bool {
	for rest := rel; ; {
		seg, after, more := strings.Cut(rest, "/")
		if seg == "" || seg == "." || seg == ".." || strings.IndexByte(seg, 0) >= 0 || strings.ContainsRune(seg, os.PathSeparator) {
			return false
		}
		if !more {
			return true
		}
		rest = after
	}
}

// sameAsScanned reports whether the opened file fi is the one the
// inventory record res describes: same size, same mtime (the scanner
// stores a zero ModTime for files modified too recently to trust, so that
// the next scan rereads them; LastMod is their mtime) and, where the
// platform has them, the same inode.
func sameAsScanned(fi os.FileInfo, res *store.Resource) bool {
	if fi.Size() != res.Size {
		return false
	}
	if !fi.ModTime().Equal(res.ModTime) && !(res.ModTime.IsZero() && fi.ModTime().Equal(res.LastMod)) {
		return false
	}
	if ino := inode(fi); ino != 0 && res.Inode != 0 && ino != res.Inode {
		return false
	}
	return true
}

// unavailable answers for a resource in the inventory whose file is not the
// one scanned (changed, replaced, or reached through a link): 503 with Retry-After,
// since the next scan settles it (a Destination retries and otherwise
// holds its checkpoint), rather than 404, which would say the resource is
// gone, or the file's current bytes, which may come from outside the set.
// lookupTimeout bounds a resource's inventory lookup: a shared store
// (PostgreSQL) can stall (a table lock, a failover), and requests must
// then end with a 503 rather than wait for it, piling up on its
// connections. A variable for tests.
var lookupTimeout = 5 * time.Second

func (h *Handler) unavailable(w http.ResponseWriter) {
	ra := h.RetryAfter
	if ra <= 0 {
		ra = 10 * time.Second
	}
	w.Header().Set("Retry-After", strconv.Itoa(int((ra+time.Second-1)/time.Second)))
	http.Error(w, "resource changed since the last scan; retry later", http.StatusServiceUnavailable)
}
