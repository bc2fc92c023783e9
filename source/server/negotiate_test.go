package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/xsdtest"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/internal/testing/webtest"
	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// Accept headers of the clients a Source meets.
var machineAccepts = []struct{ client, accept string }{
	{"none (Go's default, our sync client, Java 11 HttpClient)", ""},
	{"*/*", "*/*"},
	{"application/xml", "application/xml"},
	{"text/xml", "text/xml"},
	{"curl", "*/*"},
	{"Python requests (py-resync)", "*/*"},
	{"our validate", "application/xml, text/xml;q=0.9, */*;q=0.1"},
	{"our WebSub discovery", "application/xml, application/atom+xml, application/rss+xml, text/html;q=0.9, */*;q=0.5"},
	{"wget", "*/*"},
}

const chromiumAccept = webtest.AcceptChromium

// browserNav are the headers of a browser's navigation that decide.
var browserNav = []string{"Accept", chromiumAccept, "Sec-Fetch-Dest", "document", "Sec-Fetch-Mode", "navigate", "Upgrade-Insecure-Requests", "1"}

// publishedSource publishes a small collection (a split Resource List,
// dumps, archives) into a document tree served by a Handler.
func publishedSource(t *testing.T, mod ...func(*publish.Config)) (*httptest.Server, string) {
	t.Helper()
	dir := t.TempDir()
	for i := range 7 {
		p := filepath.Join(dir, fmt.Sprintf("d%d", i%2), fmt.Sprintf("file %d.json", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, bytes.Repeat([]byte{byte('a' + i)}, 100*i+1), 0o644)
	}
	st := scannedStore(t, dir)
	docs := t.TempDir()
	h := &Handler{Docs: docs, Mount: "/", Sets: []Set{{Prefix: "/", Dir: dir, Store: st}}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	base := srv.URL + "/"
	cfg := publish.Config{
		BaseURL: base, Out: docs, MaxEntries: 3, Dumps: true, Archives: true,
		Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base}},
	}
	for _, m := range mod {
		m(&cfg)
	}
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return srv, docs
}

// TestNegotiation: every machine client gets every document's XML byte
// for byte (valid against the XSDs), with Vary (web.VaryHTML); a browser's navigation gets the
// HTML view at the same URL; conditional GET and HEAD work for both.
func TestNegotiation(t *testing.T) {
	srv, docs := publishedSource(t)
	c, _ := testnet.Client(t)
	xsd := xsdtest.New(t, "../..")
	var rels []string
	filepath.WalkDir(docs, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(docs, p)
			rels = append(rels, filepath.ToSlash(rel))
		}
		return nil
	})
	get := func(method, path string, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+"/"+path, nil)
		for i := 0; i < len(hdr); i += 2 {
			if hdr[i+1] != "" {
				req.Header.Set(hdr[i], hdr[i+1])
			}
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	kinds := map[string]bool{}
	for _, rel := range rels {
		file, _ := os.ReadFile(filepath.Join(docs, filepath.FromSlash(rel)))
		isXML := rel == ".well-known/resourcesync" || strings.HasSuffix(rel, ".xml")
		if !isXML {
			continue
		}
		empty := !bytes.Contains(file, []byte("<loc>"))
		if err := xsd.Validate(rel, file); err != nil && !empty { // the XSDs reject an empty list (RS-GEN-11)
			t.Error(err)
		}
		for _, m := range machineAccepts {
			resp, b := get("GET", rel, "Accept", m.accept)
			if resp.StatusCode != 200 || !bytes.Equal(b, file) {
				t.Errorf("%s, Accept of %s: %d, body differs from the file: %v", rel, m.client, resp.StatusCode, !bytes.Equal(b, file))
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/xml" {
				t.Errorf("%s, %s: Content-Type %q", rel, m.client, ct)
			}
			if resp.Header.Get("Vary") != web.VaryHTML {
				t.Errorf("%s, %s: Vary %q", rel, m.client, resp.Header.Get("Vary"))
			}
		}
		resp, _ := get("HEAD", rel)
		if resp.ContentLength != int64(len(file)) || resp.Header.Get("Vary") != web.VaryHTML {
			t.Errorf("%s: HEAD Content-Length %d, Vary %q", rel, resp.ContentLength, resp.Header.Get("Vary"))
		}
		lm := resp.Header.Get("Last-Modified")
		if resp, b := get("GET", rel, "If-Modified-Since", lm); resp.StatusCode != 304 || len(b) != 0 || resp.Header.Get("Vary") != web.VaryHTML {
			t.Errorf("%s: XML If-Modified-Since: %d, Vary %q", rel, resp.StatusCode, resp.Header.Get("Vary"))
		}

		// The browser.
		resp, b := get("GET", rel, browserNav...)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
			resp.Header.Get("Content-Security-Policy") != web.CSP || resp.Header.Get("Vary") != web.VaryHTML ||
			resp.Header.Get("Last-Modified") != lm {
			t.Errorf("%s: HTML answer %d %v", rel, resp.StatusCode, resp.Header)
		}
		h1 := between(string(b), "<h1>", "</h1>")
		kinds[h1] = true
		if h1 == "" || !empty && !strings.Contains(string(b), `<td class="url"><a href="http://127.0.0.1`) {
			t.Errorf("%s: no view with entry links:\n%s", rel, b)
		}
		if resp, b := get("GET", rel, append(browserNav, "If-Modified-Since", lm)...); resp.StatusCode != 304 || len(b) != 0 || resp.Header.Get("Vary") != web.VaryHTML {
			t.Errorf("%s: HTML If-Modified-Since: %d", rel, resp.StatusCode)
		}
		if resp, b := get("HEAD", rel, browserNav...); resp.StatusCode != 200 || len(b) != 0 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: HTML HEAD: %d %q", rel, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	for _, k := range []string{"Source Description", "Capability List", "Resource List Index", "Resource List", "Change List Index",
		"Resource Dump", "Resource Dump Manifest", "Resource List Archive"} {
		if !kinds[k] {
			t.Errorf("no %s among the views (%v)", k, kinds)
		}
	}
	// Breadcrumbs climb from a part to the Source Description.
	var part string
	for _, rel := range rels {
		if strings.Contains(rel, "/parts/") && strings.HasSuffix(rel, ".xml") {
			part = rel
		}
	}
	_, b := get("GET", part, browserNav...)
	crumbs := between(string(b), `<nav aria-label="Breadcrumb">`, "</nav>")
	for _, want := range []string{">Source Description<", ">Capability List<", ">Resource List Index<"} {
		if !strings.Contains(crumbs, want) {
			t.Errorf("breadcrumbs of a part: no %s in %s", want, crumbs)
		}
	}
	// Not negotiated: packages, robots.txt; companions are HTML.
	for _, rel := range rels {
		resp, _ := get("GET", rel, browserNav...)
		ct := resp.Header.Get("Content-Type")
		switch {
		case strings.HasSuffix(rel, ".zip"):
			if ct != "application/zip" || resp.Header.Get("Vary") != "" {
				t.Errorf("%s: %q, Vary %q", rel, ct, resp.Header.Get("Vary"))
			}
		case strings.HasSuffix(rel, "robots.txt"):
			if !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("%s: %q", rel, ct)
			}
		case strings.HasSuffix(rel, ".html") && strings.HasPrefix(rel, ".resourcesync/"):
			if ct != "text/html; charset=utf-8" || resp.Header.Get("Content-Security-Policy") == "" {
				t.Errorf("companion %s: %q", rel, ct)
			}
		}
	}
	// A page of the view.
	if resp, b := get("GET", ".well-known/resourcesync?page=7", browserNav...); resp.StatusCode != 200 || !strings.Contains(string(b), "There is no page 7") {
		t.Errorf("?page=7: %d", resp.StatusCode)
	}
}

func between(s, a, b string) string {
	_, s, ok := strings.Cut(s, a)
	if !ok {
		return ""
	}
	s, _, _ = strings.Cut(s, b)
	return s
}
