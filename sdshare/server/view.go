package server

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/internal/web/docview"
	"github.com/resourcesync-go/resourcesync/sdshare/atom"
	"github.com/resourcesync-go/resourcesync/sdshare/internal/atomview"
)

// writeFeedHTML answers a browser's navigation (web.WantsHTML) with f as an HTML page
// (package atomview): the same entries and links as the Atom, links to
// other feeds lead to their pages, paging links page through, and
// breadcrumbs lead back to the collection and the overview. The page is
// written as it is rendered.
func (s *Server) writeFeedHTML(w http.ResponseWriter, r *http.Request, f *atom.Feed) {
	web.SetHeaders(w.Header())
	w.Header().Set("Cache-Control", "no-cache")
	if r.Method == http.MethodHead {
		return
	}
	release, ok := web.Acquire(w, r) // bounded: see web.Slots
	if !ok {
		return
	}
	defer release()
	crumbs, title := s.crumbs(r, f)
	err := atomview.Render(w, f, atomview.Options{
		Title:  title,
		Crumbs: crumbs,
		Base:   s.base,
		Footer: []web.Link{{Href: s.basePath + "healthz", Text: "health"}, {Href: s.basePath + "metrics", Text: "metrics"}},
	})
	if err != nil {
		// The status line is sent: the page ends where it failed.
		s.log.Error("feed page not written", "url", r.URL.String(), "err", err)
	}
}

// crumbs returns the breadcrumbs of a feed page (overview, collection,
// snapshots or the first fragments page above a page of their own) and
// its heading ("" keeps the feed's title).
func (s *Server) crumbs(r *http.Request, f *atom.Feed) ([]web.Link, string) {
	rest, _ := strings.CutPrefix(r.URL.Path, s.basePath)
	if rest == "" {
		return nil, ""
	}
	out := []web.Link{{Href: s.basePath, Text: "SDShare collections"}}
	name, sub, _ := strings.Cut(rest, "/")
	if sub == "" {
		return out, ""
	}
	col := s.basePath + url.PathEscape(name) + "/"
	out = append(out, web.Link{Href: col, Text: "Collection " + name})
	switch {
	case sub == "fragments" && r.URL.Query().Get("page") != "":
		first := col + "fragments"
		if since := r.URL.Query().Get("since"); since != "" {
			first += "?" + url.Values{"since": {strings.ReplaceAll(since, " ", "+")}}.Encode()
		}
		out = append(out, web.Link{Href: first, Text: f.Title})
		return out, f.Title + " (continued)"
	case sub == "fragments" && r.URL.Query().Has("since"):
		return out, f.Title + " since " + r.URL.Query().Get("since")
	case strings.HasPrefix(sub, "snapshot/"):
		out = append(out, web.Link{Href: col + "snapshots", Text: "Snapshots of " + name})
	}
	return out, ""
}

// serveRSDocHTML answers a browser's request for a ResourceSync document
// of the ResourceSync view (Config.ResourceSync) with its HTML view
// (package docview), one page of entries at a time (?page=N); breadcrumbs
// follow its up and index links.
func (s *Server) serveRSDocHTML(w http.ResponseWriter, r *http.Request, rel string, f *os.File) {
	web.SetHeaders(w.Header())
	w.Header().Set("Cache-Control", "no-cache")
	if r.Method == http.MethodHead {
		return
	}
	release, ok := web.Acquire(w, r) // bounded: see web.Slots
	if !ok {
		return
	}
	defer release()
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	o := docview.Options{
		Self: s.base + rel,
		Page: page,
		Open: s.openRSDoc,
		Link: func(href string) string {
			if rest, ok := strings.CutPrefix(href, s.base); ok {
				return s.basePath + rest
			}
			return href
		},
		Footer: []web.Link{{Href: s.basePath, Text: "SDShare feeds"}},
	}
	if _, err := docview.Render(w, f, o); err != nil {
		s.log.Debug("ResourceSync page not completed", "doc", rel, "err", err)
	}
}

// openRSDoc opens the ResourceSync document at an absolute URL below the
// base (for the view's breadcrumbs).
func (s *Server) openRSDoc(href string) (io.ReadCloser, error) {
	rel, ok := strings.CutPrefix(href, s.base)
	if !ok || strings.ContainsAny(rel, "?#\\") || path.Clean("/" + rel)[1:] != rel ||
		(rel != ".well-known/resourcesync" && !strings.HasPrefix(rel, ".resourcesync/")) || !strings.HasSuffix(rel, ".xml") && rel != ".well-known/resourcesync" {
		return nil, os.ErrNotExist
	}
	return os.Open(filepath.Join(s.rsOut(), filepath.FromSlash(rel)))
}
