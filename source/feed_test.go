package source

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/feed/activity"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// feedSource opens a Source of a small directory with feeds of 3
// activities a page, serves it on loopback and returns it with its base
// URL and directory.
func feedSource(t *testing.T) (*Source, string, string) {
	t.Helper()
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "c")
	for _, n := range []string{"a.txt", "b c.txt", "d/e.html", "f.png"} {
		write(t, dir, n, "content of "+n)
	}
	ln, base := listen(t)
	src, err := Open(Config{BaseURL: base, Sets: []SetConfig{{Name: "default", Dir: dir}},
		StateDir: filepath.Join(tmp, "state"), Logger: slog.New(slog.DiscardHandler), FeedPageSize: 3, PlainSitemap: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	serveOn(t, ln, src.Handler(nil))
	return src, base, dir
}

// TestServeFeeds fetches the feeds of serve as a machine client and as a
// browser: media types, CORS, Cache-Control (immutable once full),
// content negotiation of the LDES documents, the HTML view, and the links
// from the Source Description.
func TestServeFeeds(t *testing.T) {
	_, base, _ := feedSource(t)
	c, _ := testnet.Client(t)
	get := func(url string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s", url, resp.Status)
		}
		return resp, string(b)
	}
	_, sd := get(base + ".well-known/resourcesync")
	feedDir := base + ".resourcesync/default/feed/"
	// serve --plain-sitemap: robots.txt names the plain index, served.
	if _, robots := get(base + "robots.txt"); !strings.Contains(robots, "Sitemap: "+base+".resourcesync/sitemap.xml\n") {
		t.Errorf("robots.txt:\n%s", robots)
	}
	if resp, idx := get(base + ".resourcesync/sitemap.xml"); !strings.Contains(idx, "<sitemapindex") || !strings.Contains(resp.Header.Get("Content-Type"), "xml") {
		t.Errorf("plain sitemap index: %v\n%s", resp.Header, idx)
	}
	if !strings.Contains(sd, feedDir+"collection.json") || !strings.Contains(sd, feedDir+"ldes.ttl") {
		t.Fatalf("the Source Description does not link the feeds:\n%s", sd)
	}
	resp, body := get(feedDir + "collection.json")
	if resp.Header.Get("Content-Type") != activity.MediaType || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(resp.Header.Get("Cache-Control"), "max-age=5") {
		t.Errorf("collection headers %v", resp.Header)
	}
	if resp, _ := get(feedDir+"collection.json", "Accept", `application/ld+json;profile="http://iiif.io/api/discovery/1/context.json"`); resp.Header.Get("Content-Type") != `application/ld+json;profile="http://iiif.io/api/discovery/1/context.json"` {
		t.Errorf("IIIF profile asked: %v", resp.Header)
	}
	var coll activity.Collection
	if err := json.Unmarshal([]byte(body), &coll); err != nil || coll.TotalItems != 5 || coll.Last.ID != feedDir+"page-1.json" {
		t.Fatalf("collection %v %s", err, body)
	}
	// Baseline: Refresh + 4 Creates in pages of 3; the last one grows.
	for _, tc := range []struct {
		page, cache string
	}{{"page-0.json", "immutable"}, {"page-1.json", "max-age=5"}} {
		resp, body := get(feedDir + tc.page)
		if !strings.Contains(resp.Header.Get("Cache-Control"), tc.cache) || resp.Header.Get("Content-Type") != activity.MediaType {
			t.Errorf("%s: %v", tc.page, resp.Header)
		}
		if tc.page == "page-0.json" && !strings.Contains(body, `"type":"Refresh"`) {
			t.Errorf("page 0 does not begin with a Refresh:\n%s", body)
		}
	}
	for _, tc := range []struct{ accept, ctype, has string }{
		{"", "text/turtle", "ldes:EventStream"},
		{"*/*", "text/turtle", "tree:GreaterThanOrEqualToRelation"},
		{"application/ld+json", "application/ld+json", `"@graph"`},
		{"text/turtle;q=0.5, application/ld+json", "application/ld+json", `"https://w3id.org/tree#relation"`},
		{"application/n-triples", "application/n-triples", "<https://w3id.org/tree#relation>"},
		// Java's default Accept names text/html: still no HTML.
		{"text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2", "text/turtle", "tree:Node"},
	} {
		resp, body := get(feedDir+"ldes-0.ttl", "Accept", tc.accept)
		if resp.Header.Get("Content-Type") != tc.ctype || !strings.Contains(body, tc.has) ||
			!strings.Contains(resp.Header.Get("Vary"), "Accept") || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("Accept %q: %v\n%s", tc.accept, resp.Header, body)
		}
	}
	resp, body = get(feedDir+"page-1.json", "Accept", "text/html", "Sec-Fetch-Dest", "document", "Sec-Fetch-Mode", "navigate")
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "f.png") || !strings.Contains(body, `rel="prev"`) {
		t.Errorf("HTML view: %v\n%s", resp.Header, body)
	}
	_, body = get(base+".resourcesync/", "Accept", "text/html", "Sec-Fetch-Dest", "document", "Sec-Fetch-Mode", "navigate")
	if !strings.Contains(body, `href="`+feedDir+`collection.json"`) || !strings.Contains(body, `href="`+feedDir+`ldes.ttl"`) {
		t.Errorf("the status page does not link the feeds:\n%s", body)
	}
	resp, body = get(feedDir+"ldes-1.ttl", "Accept", "text/html", "Sec-Fetch-Dest", "document", "Sec-Fetch-Mode", "navigate")
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "LDES node") {
		t.Errorf("LDES HTML view: %v\n%s", resp.Header, body)
	}
}
