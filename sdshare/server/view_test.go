package server

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/internal/web/webtest"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare"
	"github.com/resourcesync-go/resourcesync/sdshare/client"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
)

// The Accept headers of common clients.
const (
	acceptChromium = webtest.AcceptChromium
	acceptFirefox  = webtest.AcceptFirefox
	acceptCurl     = "*/*"
	// acceptClient is what sdshare/client sends for a feed (client/http.go).
	acceptClient = sdshare.AtomType + ", application/xml;q=0.5, */*;q=0.1"
)

// machineAccepts get the Atom, whatever they name (Java's
// HttpURLConnection names text/html first); browserAccepts the page, on a
// navigation (nav).
var (
	machineAccepts = []string{"", "*/*", sdshare.AtomType, "application/xml", "text/xml", acceptClient, acceptCurl,
		"application/atom+xml, text/html;q=0.5", "text/html, application/atom+xml", webtest.AcceptJava8, webtest.AcceptJava17,
		"text/html", acceptChromium}
	browserAccepts = []string{acceptChromium, acceptFirefox, "text/html"}
)

// nav returns the headers of a browser's navigation with Accept accept.
func nav(accept string) []string {
	return []string{"Accept", accept, "Sec-Fetch-Dest", "document", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Site", "same-origin", "Upgrade-Insecure-Requests", "1"}
}

const hostile = `"><script>alert(1)</script>`

// viewData: labelled resources (one label hostile), a resource whose IRI
// is a javascript: IRI, and n plain ones; version v changes the values.
func viewData(n, v int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<http://ex/evil> %s %q .\n", label, fmt.Sprint(hostile, v))
	fmt.Fprintf(&b, "<javascript:alert(1)> %s \"js %d\" .\n", label, v)
	for i := range n {
		fmt.Fprintf(&b, "<http://ex/r%d> %s \"Resource %d\" .\n<http://ex/r%d> <http://ex/v> \"%d\" .\n", i, label, i, i, v*(i%2))
	}
	return b.String()
}

// newViewEnv starts a server whose fragments feed has several pages and
// whose snapshot is chunked, and waits for the snapshot.
func newViewEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, map[string]string{"data.nt": viewData(10, 1)}, func(c *Config) { c.PageSize = 3; c.ChunkSize = 4 })
	c := e.coll()
	e.write("data.nt", viewData(12, 2)) // 2 created; 5, js and evil updated
	waitFor(t, "the changes journalled", func() bool { return c.version().seq >= 8 })
	waitFor(t, "the snapshot", func() bool { return c.snapshotReady(c.version().key) })
	return e
}

// feedURLs returns every feed URL of the view env: overview, collection,
// snapshots, chunks, fragments (every page), fragments since.
func feedURLs(t *testing.T, e *env) []string {
	t.Helper()
	urls := []string{e.base, e.base + "c/", e.base + "c/snapshots"}
	snaps := e.feed(e.base + "c/snapshots")
	chunks := linksRel(snaps.Entries[0].Links, sdshare.RelChunkedSnapshot)
	if len(chunks) == 0 {
		t.Fatal("no chunked snapshot")
	}
	urls = append(urls, chunks[0].Href)
	pages := 0
	for u := e.base + "c/fragments"; u != ""; u = e.feed(u).next() {
		urls = append(urls, u)
		pages++
	}
	if pages < 3 {
		t.Fatalf("%d fragments pages, want several", pages)
	}
	return append(urls, e.base+"c/fragments?since=2000-01-01T00:00:00Z")
}

// hasVaryHTML reports whether h's Vary names every header WantsHTML reads
// (web.VaryHTML).
func hasVaryHTML(h http.Header) bool {
	have := map[string]bool{}
	for _, v := range h.Values("Vary") {
		for _, f := range strings.Split(v, ",") {
			have[strings.ToLower(strings.TrimSpace(f))] = true
		}
	}
	for _, n := range strings.Split(web.VaryHTML, ", ") {
		if !have[strings.ToLower(n)] {
			return false
		}
	}
	return true
}

// TestNegotiation: every feed URL answers the Atom byte for byte (valid
// against the RELAX NG grammar) to every machine client and a page to a
// browser's navigation, both with the same Vary; the page has every link
// of the feed.
func TestNegotiation(t *testing.T) {
	e := newViewEnv(t)
	for _, u := range feedURLs(t, e) {
		ref := e.feed(u) // no Accept: the conformance checks and RELAX NG
		_, want := e.get(u)
		for _, a := range machineAccepts {
			resp, body := e.get(u, "Accept", a)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), sdshare.AtomType) {
				t.Errorf("%s, Accept %q: %s %s", u, a, resp.Status, resp.Header.Get("Content-Type"))
			}
			if !bytes.Equal(body, want) {
				t.Errorf("%s, Accept %q: the Atom differs from the one without Accept:\n%s\n---\n%s", u, a, body, want)
			}
			if !hasVaryHTML(resp.Header) {
				t.Errorf("%s, Accept %q: Vary %q", u, a, resp.Header.Values("Vary"))
			}
		}
		for _, a := range browserAccepts {
			resp, body := e.get(u, nav(a)...)
			page := string(body)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
				t.Errorf("%s, Accept %q: %s %s", u, a, resp.Status, resp.Header.Get("Content-Type"))
			}
			if !hasVaryHTML(resp.Header) || resp.Header.Get("Content-Security-Policy") != web.CSP {
				t.Errorf("%s, Accept %q: headers %v", u, a, resp.Header)
			}
			if strings.Contains(strings.ToLower(page), "<script") {
				t.Errorf("%s: a script element on the page", u)
			}
			hrefs := pageHrefs(t, page)
			for _, l := range ref.Links {
				if l.Rel != "self" && !slices.Contains(hrefs, localPath(e, l.Href)) {
					t.Errorf("%s: feed link %s %s not on the page", u, l.Rel, l.Href)
				}
			}
			for _, en := range ref.Entries {
				for _, l := range en.Links {
					if !slices.Contains(hrefs, localPath(e, l.Href)) {
						t.Errorf("%s: entry %s: link %s not on the page", u, en.IDs[0], l.Href)
					}
				}
				if !strings.Contains(page, xmlEscape(en.Titles[0])) || !strings.Contains(page, xmlEscape(en.IDs[0])) {
					t.Errorf("%s: entry %s (%q) not on the page", u, en.IDs[0], en.Titles[0])
				}
			}
			for _, h := range hrefs {
				if low := strings.ToLower(h); strings.Contains(low, "javascript:") || strings.HasPrefix(low, "data:") {
					t.Errorf("%s: live link %q", u, h)
				}
			}
		}
		// HEAD answers the same headers, no body.
		req, _ := http.NewRequest(http.MethodHead, u, nil)
		for h := nav(acceptChromium); len(h) > 0; h = h[2:] {
			req.Header.Set(h[0], h[1])
		}
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || len(b) != 0 || !hasVaryHTML(resp.Header) {
			t.Errorf("HEAD %s: %s %v, %d bytes", u, resp.Status, resp.Header, len(b))
		}
	}
	// The hostile label is text, the javascript: resource a text too, and
	// its fragment link an http one.
	var all strings.Builder
	for _, u := range feedURLs(t, e) {
		_, body := e.get(u, nav(acceptChromium)...)
		all.Write(body)
	}
	for _, want := range []string{`<code class="resource">javascript:alert(1)</code>`, `&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;2`, `href="/sd/c/fragment?resource=javascript%3Aalert%281%29&amp;format=txt"`} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("no page has %q", want)
		}
	}
	_, body := e.get(e.base+"c/fragments?since=2000-01-01T00:00:00Z", nav(acceptChromium)...)
	if page := string(body); !strings.Contains(page, "<h1>Fragments of c since 2000-01-01T00:00:00Z</h1>") {
		t.Errorf("since page heading:\n%s", page)
	}
	_, body = e.get(e.base+"c/snapshots", nav(acceptChromium)...)
	if !strings.Contains(string(body), `<li><a href="/sd/">SDShare collections</a></li><li><a href="/sd/c/">Collection c</a></li><li aria-current="page">Snapshots of c</li>`) {
		t.Errorf("snapshots page breadcrumbs:\n%s", body)
	}
}

// xmlEscape escapes s as html/template writes text.
func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return strings.NewReplacer("&#34;", "&#34;", "&#39;", "&#39;").Replace(b.String())
}

// localPath is href as the page writes it: a path from the root when it is
// below the base.
func localPath(e *env, href string) string {
	if rest, ok := strings.CutPrefix(href, e.base); ok {
		return "/sd/" + rest
	}
	return href
}

// pageHrefs reads a page leniently (as HTML) and returns its links' hrefs.
func pageHrefs(t *testing.T, page string) []string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(page))
	d.Strict, d.AutoClose, d.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	var out []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("page does not parse: %v\n%s", err, page)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "a" {
			for _, a := range se.Attr {
				if a.Name.Local == "href" {
					out = append(out, a.Value)
				}
			}
		}
	}
}

// TestClientUnchanged: the SDShare client, with its own Accept, still
// keeps an embedded graph store of either backend in step with the
// server (the snapshot, chunked, then the fragments feed's pages).
func TestClientUnchanged(t *testing.T) {
	e := newViewEnv(t)
	for _, backend := range []string{"memstore", "boltstore"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			var st graphstore.Store = memstore.New()
			if backend == "boltstore" {
				b, err := boltstore.OpenDir(dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				st = b
			}
			defer st.Close()
			state, err := client.OpenState(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer state.Close()
			ctx := context.Background()
			cfg := client.Config{Overview: e.base, Store: st, State: state, HTTPClient: e.client,
				Retry: client.RetryPolicy{BaseDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond}, MaxWait: 30 * time.Second}
			for run := range 2 { // the snapshot, then the feed
				rep, err := client.Sync(ctx, cfg)
				if err != nil || !rep.OK() {
					t.Fatalf("run %d: %v %+v", run, err, rep)
				}
				var got []rdf.Triple
				for tr, err := range st.Triples(ctx, rep.Collections[0].Graph) {
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, tr)
				}
				var want []rdf.Triple
				for tr, err := range rdf.Parse(strings.NewReader(viewData(12, 2)), rdf.NTriples, "") {
					if err != nil {
						t.Fatal(err)
					}
					want = append(want, tr)
				}
				if !rdf.Isomorphic(got, want) {
					t.Fatalf("run %d: the store differs from the server's graph: %s", run, rdf.IsomorphicDiff(got, want))
				}
			}
		})
	}
}

// discardWriter is a ResponseWriter that counts and drops the body.
type discardWriter struct {
	h http.Header
	n int64
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Write(p []byte) (int, error) { d.n += int64(len(p)); return len(p), nil }

// BenchmarkFragmentsPage: one full page (DefaultPageSize entries) of the
// fragments feed as Atom and as the browser's page.
func BenchmarkFragmentsPage(b *testing.B) {
	const n = 2 * DefaultPageSize
	dir := b.TempDir()
	p := dir + "/d.nt"
	os.WriteFile(p, []byte(genData(n)), 0o644)
	s, err := Open(context.Background(), Config{BaseURL: "http://127.0.0.1/", StateDir: b.TempDir(), NoSync: true,
		Collections: []CollectionConfig{{Name: "c", Path: dir}}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	os.WriteFile(p, []byte(strings.ReplaceAll(genData(n), "Resource", "Ressource")), 0o644)
	if _, err := s.Collection("c").Load(context.Background(), true); err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	for _, c := range []struct{ name, accept string }{{"atom", ""}, {"html", acceptChromium}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var size int64
			for b.Loop() {
				r, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/c/fragments", nil)
				if c.accept != "" {
					for h := nav(c.accept); len(h) > 0; h = h[2:] {
						r.Header.Set(h[0], h[1])
					}
				}
				w := &discardWriter{h: http.Header{}}
				h.ServeHTTP(w, r)
				size = w.n
			}
			b.ReportMetric(float64(size), "bytes/page")
		})
	}
}
