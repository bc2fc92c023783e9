package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/internal/testing/webtest"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func gunzipFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return gunzip(t, b)
}

// TestGzipDocument: a document stored compressed answers HEAD, Range,
// If-Modified-Since and If-Range as a plain one does, in the coding each
// client accepts: Content-Length and ranges count the stored bytes for a
// gzip answer and the XML's for an identity one (HEAD decodes nothing);
// several ranges of the XML get the whole document; a 304 carries no
// Content-Encoding; the HTML view and its breadcrumbs read the XML.
func TestGzipDocument(t *testing.T) {
	srv, docs := publishedSource(t, func(c *publish.Config) { c.GzipLists = true; c.Dumps = false })
	var rel string
	filepath.WalkDir(docs, func(p string, d fs.DirEntry, err error) error {
		if strings.HasSuffix(p, ".xml.gz") && rel == "" {
			r, _ := filepath.Rel(docs, strings.TrimSuffix(p, ".gz"))
			rel = filepath.ToSlash(r)
		}
		return nil
	})
	if rel == "" {
		t.Fatal("no part stored compressed")
	}
	path := filepath.Join(docs, filepath.FromSlash(rel))
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("%s stored plain as well: %v", rel, err)
	}
	zipped, _ := os.ReadFile(path + ".gz")
	xml := gunzip(t, zipped)
	fi, _ := os.Stat(path + ".gz")
	lm := fi.ModTime().UTC().Format(http.TimeFormat)
	c, _ := testnet.Client(t)
	c.Transport.(*http.Transport).DisableCompression = true
	for _, tc := range []struct {
		name, method, ae string
		hdr              []string
		code             int
		ce               string
		body             []byte // nil: none checked
		length           int
	}{
		{"gzip GET", "GET", "gzip", nil, 200, "gzip", zipped, len(zipped)},
		{"gzip HEAD", "HEAD", "gzip", nil, 200, "gzip", nil, len(zipped)},
		{"identity GET", "GET", "", nil, 200, "", xml, len(xml)},
		{"identity HEAD", "HEAD", "", nil, 200, "", nil, len(xml)},
		{"gzip;q=0", "GET", "gzip;q=0, identity", nil, 200, "", xml, len(xml)},
		{"gzip range", "GET", "gzip", []string{"Range", "bytes=10-19"}, 206, "gzip", zipped[10:20], 10},
		{"identity range", "GET", "", []string{"Range", "bytes=100-199"}, 206, "", xml[100:200], 100},
		{"identity suffix range", "GET", "", []string{"Range", "bytes=-50"}, 206, "", xml[len(xml)-50:], 50},
		{"identity ranges: whole", "GET", "", []string{"Range", "bytes=300-310,0-10,300-310"}, 200, "", xml, len(xml)},
		{"identity range past the end", "GET", "", []string{"Range", "bytes=" + strconv.Itoa(len(xml)+5) + "-"}, 416, "", nil, -1},
		{"gzip If-Modified-Since", "GET", "gzip", []string{"If-Modified-Since", lm}, 304, "", nil, -1},
		{"identity If-Modified-Since", "GET", "", []string{"If-Modified-Since", lm}, 304, "", nil, -1},
		{"identity If-Range, stale", "GET", "", []string{"Range", "bytes=0-9", "If-Range", "Mon, 02 Jan 2006 15:04:05 GMT"}, 200, "", xml, len(xml)},
		{"identity If-Range, current", "GET", "", []string{"Range", "bytes=0-9", "If-Range", lm}, 206, "", xml[:10], 10},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+"/"+rel, nil)
		if tc.ae != "" {
			req.Header.Set("Accept-Encoding", tc.ae)
		}
		for i := 0; i < len(tc.hdr); i += 2 {
			req.Header.Set(tc.hdr[i], tc.hdr[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || resp.Header.Get("Content-Encoding") != tc.ce {
			t.Errorf("%s: %d, Content-Encoding %q", tc.name, resp.StatusCode, resp.Header.Get("Content-Encoding"))
			continue
		}
		if tc.body != nil && !bytes.Equal(body, tc.body) {
			t.Errorf("%s: body %.80q", tc.name, body)
		}
		if tc.length >= 0 && resp.Header.Get("Content-Length") != strconv.Itoa(tc.length) {
			t.Errorf("%s: Content-Length %q, want %d", tc.name, resp.Header.Get("Content-Length"), tc.length)
		}
		if tc.code == 200 && !strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Accept-Encoding") {
			t.Errorf("%s: Vary %q", tc.name, resp.Header.Values("Vary"))
		}
	}
	// The HTML view of the part, to a browser that accepts gzip: the
	// page of the XML (entries as links), not an error.
	req, _ := http.NewRequest("GET", srv.URL+"/"+rel, nil)
	nav := browser(t)
	nav.Set(req)
	req.Header.Set("Accept-Encoding", webtest.AcceptEncoding[nav.Name])
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" || !bytes.Contains(page, []byte("Resource List")) || !bytes.Contains(page, []byte(".json")) {
		t.Errorf("HTML view: %d %q %.200q", resp.StatusCode, resp.Header.Get("Content-Encoding"), page)
	}
}

// TestGzipDocumentHostile: a compressed document that is a symbolic
// link is not followed, one too short to be gzip or claiming more than a
// document can hold is refused to an identity client (500, a log line),
// only an XML document's name falls back to a .gz file, and the stored
// name itself is no URL.
func TestGzipDocumentHostile(t *testing.T) {
	docs := t.TempDir()
	d := filepath.Join(docs, ".resourcesync", "default")
	os.MkdirAll(d, 0o755)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte("<urlset/>"))
	zw.Close()
	good := buf.Bytes()
	os.WriteFile(filepath.Join(docs, "secret.xml.gz"), good, 0o644)
	os.Symlink(filepath.Join(docs, "secret.xml.gz"), filepath.Join(d, "link.xml.gz"))
	os.WriteFile(filepath.Join(d, "short.xml.gz"), good[:10], 0o644)
	huge := append([]byte(nil), good...)
	copy(huge[len(huge)-4:], []byte{0xff, 0xff, 0xff, 0xff})
	os.WriteFile(filepath.Join(d, "huge.xml.gz"), huge, 0o644)
	os.WriteFile(filepath.Join(d, "robots.txt.gz"), good, 0o644)
	os.WriteFile(filepath.Join(d, "ok.xml.gz"), good, 0o644)
	h := &Handler{Docs: docs, Mount: "/"}
	for _, tc := range []struct {
		name string
		code int
	}{
		{"link.xml", 404},
		{"short.xml", 500},
		{"huge.xml", 500},
		{"robots.txt", 404},
		{"ok.xml", 200},
		{"ok.xml.gz", 404}, // the stored name is no URL
	} {
		req, _ := http.NewRequest("GET", "http://src.example/.resourcesync/default/"+tc.name, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.code || tc.code == 200 && rec.Body.String() != "<urlset/>" {
			t.Errorf("%s: %d %q", tc.name, rec.Code, rec.Body.String())
		}
	}
}
