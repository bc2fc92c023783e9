package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// The ResourceSync view (Config.ResourceSync): the same collections
// published as a ResourceSync Source, from the same state. Each resource's
// fragment is a ResourceSync resource at B NAME/rs/<escaped IRI>; its
// inventory record (SHA-256 and MD5 of the canonical N-Triples, length,
// type) is what source/publish writes into the Resource List, and the
// change journal the SDShare fragments feed is made of is what it writes
// into Change Lists. Documents live in STATE/resourcesync and are served
// at B .well-known/resourcesync, B .resourcesync/... and B robots.txt.

func (s *Server) rsOut() string { return filepath.Join(s.cfg.StateDir, "resourcesync") }

// rsBase is the URL prefix of a collection's ResourceSync resources.
func (c *Collection) rsBase() string { return c.URL() + "rs/" }

// publishRS writes the ResourceSync documents of every collection.
func (s *Server) publishRS(ctx context.Context) error {
	var sets []publish.Set
	for _, c := range s.cols {
		sets = append(sets, publish.Set{Name: c.name, Store: c.st, ResourceBase: c.rsBase(), Loc: rsPath})
	}
	// No HTML companions: serveRSDoc answers a browser with the view of
	// the document itself.
	pc := publish.Config{BaseURL: s.base, Out: s.rsOut(), Sets: sets,
		ChangeListPeriod: s.cfg.ChangeListPeriod, Logger: s.log, NoCompanions: true}
	n := s.cfg.Notifier
	if n != nil {
		pc.Notification = func(set string) (string, string) { return n.Topic(set), n.Hub }
	}
	if _, err := publish.Publish(ctx, pc); err != nil {
		return err
	}
	// Notifications after the documents: a subscriber that fetches the
	// Change List on a notification finds the change in it.
	var errs []error
	if n != nil {
		for _, c := range s.cols {
			if err := n.Notify(ctx, c.name, c.st); err != nil {
				errs = append(errs, fmt.Errorf("notifications of %s: %w", c.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// runRS publishes again after every change, until ctx ends.
func (s *Server) runRS(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.rsWake:
		}
		if err := s.publishRS(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("ResourceSync documents not published", "err", err)
			retry.Sleep(ctx, time.Second)
			s.wakeRS()
		}
	}
}

func (s *Server) wakeRS() {
	select {
	case s.rsWake <- struct{}{}:
	default:
	}
}

// serveRSDoc serves a published document (rel is below the base path).
func (s *Server) serveRSDoc(w http.ResponseWriter, r *http.Request, rel string) bool {
	if rel != "robots.txt" && rel != ".well-known/resourcesync" && !strings.HasPrefix(rel, ".resourcesync/") {
		return false
	}
	if n := s.cfg.Notifier; n != nil {
		if set, ok := strings.CutSuffix(strings.TrimPrefix(rel, ".resourcesync/"), "/notifications"); ok && s.byName[set] != nil {
			n.TopicHandler(set).ServeHTTP(w, r)
			return true
		}
	}
	clean := path.Clean("/" + rel)[1:]
	if clean != rel || strings.Contains(rel, "\\") {
		http.NotFound(w, r)
		return true
	}
	f, err := os.Open(filepath.Join(s.rsOut(), filepath.FromSlash(rel)))
	if err != nil {
		http.NotFound(w, r)
		return true
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.IsDir() {
		http.NotFound(w, r)
		return true
	}
	switch {
	case strings.HasSuffix(rel, ".txt"):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	case strings.HasSuffix(rel, ".zip"):
		w.Header().Set("Content-Type", "application/zip")
	case strings.HasSuffix(rel, ".html"):
		// An HTML companion source/publish may write beside a document.
		web.SetHeaders(w.Header())
	default:
		// The XML for every machine client, byte for byte; its HTML view
		// (view.go) for a browser's navigation (web.WantsHTML).
		web.Vary(w.Header())
		if web.WantsHTML(r) {
			s.serveRSDocHTML(w, r, rel, f)
			return true
		}
		w.Header().Set("Content-Type", "application/xml")
	}
	http.ServeContent(w, r, "", fi.ModTime(), f)
	return true
}

// serveRSResource serves a resource of the ResourceSync view: the
// fragment's canonical N-Triples, whose hash and length the inventory
// holds. Resources not in the inventory (deleted) are 404, as
// ResourceSync expects.
func (c *Collection) serveRSResource(w http.ResponseWriter, r *http.Request, escaped string) {
	iri, err := rsIRI(escaped)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	rec, err := c.st.Get(r.Context(), iri)
	if errors.Is(err, store.ErrNotFound) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	b, err := c.fragment(iri, rdf.NTriples)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", rec.Type)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Header().Set("Link", "<"+c.srv.base+".resourcesync/"+c.name+"/capabilitylist.xml>; rel=\"resourcesync\"")
	if r.Method != http.MethodHead {
		w.Write(b)
	}
}
