package server

import (
	"bytes"
	"encoding/xml"
	"net/http"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/webtest"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/sdshare"
	"github.com/resourcesync-go/resourcesync/sdshare/atom"
)

// getAs GETs u with the default headers of client c.
func getAs(e *env, u string, c webtest.Client) (*http.Response, []byte) {
	e.t.Helper()
	var hdr []string
	for k, vs := range c.Header {
		for _, v := range vs {
			hdr = append(hdr, k, v)
		}
	}
	return e.get(u, hdr...)
}

// TestClientsGetAtom: every feed (overview, collection, snapshots,
// chunks, every fragments page) answers the default request of each
// client (webtest.Clients) with the Atom, byte for byte as a request
// without headers gets it, and only a browser's navigation with the page.
func TestClientsGetAtom(t *testing.T) {
	e := newViewEnv(t)
	for _, u := range feedURLs(t, e) {
		_, want := e.get(u)
		for _, c := range webtest.Clients {
			resp, body := getAs(e, u, c)
			ct := resp.Header.Get("Content-Type")
			if resp.StatusCode != 200 || !hasVaryHTML(resp.Header) {
				t.Errorf("%s, %s: %s, Vary %q", u, c.Name, resp.Status, resp.Header.Values("Vary"))
			}
			if c.HTML {
				if ct != "text/html; charset=utf-8" {
					t.Errorf("%s, %s: %q, not the page", u, c.Name, ct)
				}
				continue
			}
			if !strings.HasPrefix(ct, sdshare.AtomType) || !bytes.Equal(body, want) {
				t.Errorf("%s, %s: %q, not the Atom (%.60q)", u, c.Name, ct, body)
			}
		}
	}
}

// TestJavaSDShareClient walks a server as the Java SDShare server test
// suite does, with HttpURLConnection's default Accept (Java 8 and 17
// spellings, which name text/html first): the overview, the collection
// feed, the fragments feed (every page) and the snapshots feed are
// application/atom+xml that parses as Atom; the fragment and snapshot
// data are RDF; and every ResourceSync document is XML.
func TestJavaSDShareClient(t *testing.T) {
	e, docs := rsDocs(t)
	for _, accept := range []string{webtest.AcceptJava8, webtest.AcceptJava17} {
		get := func(u string) []byte {
			t.Helper()
			resp, body := e.get(u, "Accept", accept, "User-Agent", "Java/17.0.10")
			if resp.StatusCode != 200 {
				t.Fatalf("%s (Accept %q): %s", u, accept, resp.Status)
			}
			return body
		}
		feed := func(u string) *atom.Feed {
			t.Helper()
			resp, body := e.get(u, "Accept", accept, "User-Agent", "Java/17.0.10")
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "application/atom+xml") {
				t.Fatalf("%s (Accept %q): %s %q\n%.200s", u, accept, resp.Status, ct, body)
			}
			f, err := atom.Decode(bytes.NewReader(body), u)
			if err != nil {
				t.Fatalf("%s (Accept %q): not Atom: %v", u, accept, err)
			}
			return f
		}
		href := func(f *atom.Feed, ls []atom.Link, rel string) string {
			t.Helper()
			for _, l := range ls {
				if l.Rel == rel {
					return l.Href
				}
			}
			t.Fatalf("%s: no %s link", f.ID, rel)
			return ""
		}
		over := feed(e.base)
		if len(over.Entries) == 0 {
			t.Fatal("overview: no collection")
		}
		coll := feed(href(over, over.Entries[0].Links, sdshare.RelCollectionFeed))
		var frags, snaps string
		for _, en := range coll.Entries {
			for _, l := range en.Links {
				switch l.Rel {
				case sdshare.RelFragmentsFeed:
					frags = l.Href
				case sdshare.RelSnapshotsFeed:
					snaps = l.Href
				}
			}
		}
		if frags == "" || snaps == "" {
			t.Fatalf("collection feed: fragments %q, snapshots %q", frags, snaps)
		}
		pages, fragments := 0, 0
		var data string
		for u := frags; u != ""; pages++ {
			f := feed(u)
			for _, en := range f.Entries {
				fragments++
				if data == "" {
					data = href(f, en.Links, sdshare.RelFragment)
				}
			}
			u = f.Next()
		}
		if pages == 0 || fragments == 0 || data == "" {
			t.Fatalf("fragments: %d pages, %d entries", pages, fragments)
		}
		if b := get(data); bytes.Contains(b, []byte("<html")) || bytes.Contains(b, []byte("<!DOCTYPE")) {
			t.Errorf("fragment data is a page: %.200s", b)
		}
		feed(snaps)
		for _, u := range docs {
			resp, body := e.get(u, "Accept", accept)
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/xml" {
				t.Errorf("%s (Accept %q): %s %q", u, accept, resp.Status, ct)
				continue
			}
			if _, err := rs.NewDecoder(bytes.NewReader(body)).Head(); err != nil {
				t.Errorf("%s: %v", u, err)
			}
			if err := xml.Unmarshal(body, new(struct{})); err != nil {
				t.Errorf("%s: %v", u, err)
			}
		}
	}
}
