package server

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/internal/testing/webtest"
	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// TestClientsGetXML: over HTTP, every ResourceSync document answers the
// default request of each client (webtest.Clients, with its default
// Accept-Encoding, webtest.AcceptEncoding): Java's HttpURLConnection,
// whose Accept names text/html first, and every other machine client get
// the published XML byte for byte (a document rs decodes); only a
// browser's navigation gets the page; both carry the same Vary. Resource
// List parts stored compressed (publish.Config.GzipLists, as serve
// stores them) give every client the same XML: the stored gzip bytes to a
// client that accepts gzip, the XML decoded on the fly to the others.
func TestClientsGetXML(t *testing.T) {
	for _, gz := range []bool{false, true} {
		srv, docs := publishedSource(t, func(c *publish.Config) { c.GzipLists = gz })
		clientsGetXML(t, srv, docs, gz)
	}
}

func clientsGetXML(t *testing.T, srv *httptest.Server, docs string, gz bool) {
	c, _ := testnet.Client(t)
	c.Transport.(*http.Transport).DisableCompression = true // each client's own Accept-Encoding
	var rels []string
	stored := map[string]bool{}
	filepath.WalkDir(docs, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(docs, p)
		rel = filepath.ToSlash(rel)
		if x, ok := strings.CutSuffix(rel, ".xml.gz"); ok {
			rel = x + ".xml"
			stored[rel] = true
		}
		if err == nil && !d.IsDir() && (strings.HasSuffix(rel, ".xml") || rel == ".well-known/resourcesync") {
			rels = append(rels, rel)
		}
		return nil
	})
	if len(rels) < 8 {
		t.Fatalf("%d documents published", len(rels))
	}
	if gz != (len(stored) >= 2) {
		t.Fatalf("GzipLists %v: %d documents stored compressed", gz, len(stored))
	}
	for _, rel := range rels {
		file, _ := os.ReadFile(filepath.Join(docs, filepath.FromSlash(rel)))
		if stored[rel] {
			file = gunzipFile(t, filepath.Join(docs, filepath.FromSlash(rel))+".gz")
		}
		for _, cl := range webtest.Clients {
			req, _ := http.NewRequest("GET", srv.URL+"/"+rel, nil)
			cl.Set(req)
			ae := webtest.AcceptEncoding[cl.Name]
			if ae != "" {
				req.Header.Set("Accept-Encoding", ae)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ce := resp.Header.Get("Content-Encoding")
			if ce == "gzip" {
				body = gunzip(t, body)
			}
			ct := resp.Header.Get("Content-Type")
			if resp.StatusCode != 200 || resp.Header.Get("Vary") != web.VaryHTML {
				t.Errorf("%s, %s: %d, Vary %q", rel, cl.Name, resp.StatusCode, resp.Header.Get("Vary"))
			}
			if cl.HTML {
				if ct != "text/html; charset=utf-8" || ce != "" || !bytes.Contains(body, []byte("<h1>")) {
					t.Errorf("%s, %s: %q %q, not the page", rel, cl.Name, ct, ce)
				}
				continue
			}
			if want := stored[rel] && strings.Contains(ae, "gzip"); (ce == "gzip") != want || stored[rel] && !slices.Contains(resp.Header.Values("Vary"), "Accept-Encoding") {
				t.Errorf("%s, %s (Accept-Encoding %q): Content-Encoding %q, Vary %q", rel, cl.Name, ae, ce, resp.Header.Values("Vary"))
			}
			if ct != "application/xml" || !bytes.Equal(body, file) {
				t.Errorf("%s, %s: %q, the body is not the document (%.60q)", rel, cl.Name, ct, body)
				continue
			}
			if _, err := rs.NewDecoder(bytes.NewReader(body)).Head(); err != nil {
				t.Errorf("%s, %s: %v", rel, cl.Name, err)
			}
		}
	}
	// ?format=html asks for the page from any client; ?format=xml for the
	// XML from a browser's address bar.
	for _, c2 := range []struct {
		query string
		cl    webtest.Client
		html  bool
	}{
		{"?format=html", webtest.Clients[0], true},
		{"?format=xml", browser(t), false},
	} {
		req, _ := http.NewRequest("GET", srv.URL+"/.well-known/resourcesync"+c2.query, nil)
		c2.cl.Set(req)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"); got != c2.html {
			t.Errorf("%s from %s: %s", c2.query, c2.cl.Name, resp.Header.Get("Content-Type"))
		}
	}
}

// browser returns the first navigating browser of webtest.Clients.
func browser(t *testing.T) webtest.Client {
	for _, c := range webtest.Clients {
		if c.HTML {
			return c
		}
	}
	t.Fatal("no browser among the clients")
	return webtest.Client{}
}

// rootHandler serves files (scanned) as one set at /, with docs holding
// a Source Description, and a status page when status is set.
func rootHandler(t *testing.T, files map[string]string, status http.Handler) *Handler {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	st := scannedStore(t, dir)
	docs := t.TempDir()
	os.MkdirAll(filepath.Join(docs, ".well-known"), 0o755)
	os.WriteFile(filepath.Join(docs, ".well-known", "resourcesync"), []byte("<urlset/>"), 0o644)
	return &Handler{Docs: docs, Mount: "/", Status: status,
		Sets: []Set{{Prefix: "/", Dir: dir, Store: st, CapabilityList: "http://x/.resourcesync/default/capabilitylist.xml"}}}
}

// TestRoot: the base URL is DIR's index.html when there is one (for
// every client, with a Link header to the Source Description rather than
// to one set's Capability List); otherwise a browser's navigation is sent to the status page (or
// the Source Description's page) and every other client gets a 404 that
// names the Source Description.
func TestRoot(t *testing.T) {
	status := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "status page") })
	nav := browser(t)
	for _, c := range []struct {
		name   string
		files  map[string]string
		status http.Handler
		mount  string
		path   string
	}{
		{"index.html", map[string]string{"index.html": "<p>welcome</p>", "a.txt": "a"}, status, "/", "/"},
		{"no index.html", map[string]string{"a.txt": "a"}, status, "/", "/"},
		{"no status page", map[string]string{"a.txt": "a"}, nil, "/", "/"},
		{"mounted, without the slash", map[string]string{"a.txt": "a"}, status, "/m/", "/m"},
		{"mounted, index.html", map[string]string{"index.html": "<p>welcome</p>"}, status, "/m/", "/m/"},
	} {
		h := rootHandler(t, c.files, c.status)
		h.Mount = c.mount
		h.Sets[0].Prefix = c.mount
		_, index := c.files["index.html"]
		for _, cl := range webtest.Clients {
			for _, method := range []string{"GET", "HEAD"} {
				r := httptest.NewRequest(method, "http://src.example"+c.path, nil)
				cl.Set(r)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				hd, body := rec.Header(), rec.Body.String()
				switch {
				case index:
					if rec.Code != 200 || method == "GET" && body != "<p>welcome</p>" || hd.Get("Link") != "<"+c.mount+`.well-known/resourcesync>; rel="resourcesync"` || hd.Get("ETag") == "" {
						t.Errorf("%s, %s %s: %d %v %q", c.name, cl.Name, method, rec.Code, hd, body)
					}
				case cl.HTML:
					want := c.mount + ".resourcesync/"
					if c.status == nil {
						want = c.mount + ".well-known/resourcesync"
					}
					if rec.Code != http.StatusFound || hd.Get("Location") != want || hd.Get("Vary") != web.VaryHTML {
						t.Errorf("%s, %s %s: %d %v", c.name, cl.Name, method, rec.Code, hd)
					}
				default:
					if rec.Code != 404 || hd.Get("Vary") != web.VaryHTML || !strings.HasPrefix(hd.Get("Content-Type"), "text/plain") ||
						method == "GET" && !strings.Contains(body, c.mount+".well-known/resourcesync") {
						t.Errorf("%s, %s %s: %d %v %q", c.name, cl.Name, method, rec.Code, hd, body)
					}
				}
			}
		}
		// The status page itself and other paths are as they were.
		r := httptest.NewRequest("GET", "http://src.example"+c.mount+"a.txt", nil)
		nav.Set(r)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if _, ok := c.files["a.txt"]; ok && (rec.Code != 200 || rec.Body.String() != "a" || rec.Header().Get("Link") == "") {
			t.Errorf("%s: a.txt: %d %v", c.name, rec.Code, rec.Header())
		}
	}
}

// TestCompanionURLs: without companions in the tree (serve writes none),
// the URLs publish gives them for static hosting answer the HTML view of
// their document, to every client, as the static files would; a
// companion's page N is the view's page N.
func TestCompanionURLs(t *testing.T) {
	srv, _ := publishedSource(t, func(c *publish.Config) { c.NoCompanions = true; c.MaxEntries = 0 })
	c, _ := testnet.Client(t)
	for _, cc := range []struct {
		path string
		code int
		h1   string
	}{
		{".well-known/resourcesync.html", 200, "Source Description"},
		{".resourcesync/default/capabilitylist.html", 200, "Capability List"},
		{".resourcesync/default/resourcelist.html", 200, "Resource List"},
		{".resourcesync/default/resourcelist.2.html", 200, "Resource List"},
		{".resourcesync/default/nosuch.html", 404, ""},
		{".well-known/nosuch.html", 404, ""},
	} {
		req, _ := http.NewRequest("GET", srv.URL+"/"+cc.path, nil)
		webtest.Clients[0].Set(req) // Java
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != cc.code {
			t.Errorf("%s: %s", cc.path, resp.Status)
			continue
		}
		if cc.code == 200 && (resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || between(string(body), "<h1>", "</h1>") != cc.h1) {
			t.Errorf("%s: %q, h1 %q", cc.path, resp.Header.Get("Content-Type"), between(string(body), "<h1>", "</h1>"))
		}
		if strings.HasSuffix(cc.path, ".2.html") && !strings.Contains(string(body), "There is no page 2") {
			t.Errorf("%s: not page 2", cc.path)
		}
	}
}
