package discover

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// getter returns a Getter for tests: loopback-only client, fast backoff, a
// temporary directory checked to be empty when the test ends.
func getter(t *testing.T) *Getter {
	t.Helper()
	c, _ := testnet.Client(t)
	dir := t.TempDir()
	t.Cleanup(func() {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	})
	return &Getter{Client: c, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond,
		MaxRetryAfter: 10 * time.Millisecond, TempDir: dir}
}

// item is one <url> or <sitemap> of a fixture document.
type item struct {
	loc, capability string
	links           string // raw rs:ln elements
}

// xmlDoc writes a ResourceSync document. root is "urlset" or
// "sitemapindex"; up, if set, becomes the root rel="up" link.
func xmlDoc(root, capability, up string, items ...item) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(&b, `<%s xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">`+"\n", root)
	if up != "" {
		fmt.Fprintf(&b, `<rs:ln rel="up" href="%s"/>`+"\n", up)
	}
	attrs := ""
	switch capability {
	case "resourcelist", "resourcedump":
		attrs = ` at="2026-01-01T00:00:00Z"`
	case "changelist", "changedump":
		attrs = ` from="2026-01-01T00:00:00Z"`
	}
	fmt.Fprintf(&b, `<rs:md capability="%s"%s/>`+"\n", capability, attrs)
	el := "url"
	if root == "sitemapindex" {
		el = "sitemap"
	}
	for _, it := range items {
		fmt.Fprintf(&b, "<%s><loc>%s</loc>", el, it.loc)
		if it.capability != "" {
			fmt.Fprintf(&b, `<rs:md capability="%s"/>`, it.capability)
		}
		b.WriteString(it.links)
		fmt.Fprintf(&b, "</%s>\n", el)
	}
	fmt.Fprintf(&b, "</%s>\n", root)
	return b.String()
}

// site is a hand-made server: paths map to bodies in which "BASE" is
// replaced by the server's URL (without the trailing slash). Every
// request is counted per path.
type site struct {
	*httptest.Server
	pages map[string]page
	hits  map[string]*atomic.Int32
}

type page struct {
	body   string
	ctype  string
	status int               // 0: 200
	header map[string]string // "BASE" replaced too
}

func newSite(t *testing.T, pages map[string]page) *site {
	t.Helper()
	s := &site{pages: pages, hits: map[string]*atomic.Int32{}}
	for p := range pages {
		s.hits[p] = new(atomic.Int32)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pg, ok := s.pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		s.hits[r.URL.Path].Add(1)
		for k, v := range pg.header {
			w.Header().Set(k, strings.ReplaceAll(v, "BASE", s.URL))
		}
		ct := pg.ctype
		if ct == "" {
			ct = "application/xml"
		}
		w.Header().Set("Content-Type", ct)
		if pg.status != 0 {
			w.WriteHeader(pg.status)
		}
		fmt.Fprint(w, strings.ReplaceAll(pg.body, "BASE", s.URL))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) hitCount(p string) int {
	if h := s.hits[p]; h != nil {
		return int(h.Load())
	}
	return 0
}
