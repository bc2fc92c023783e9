package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
)

func setup(t *testing.T, files map[string]string) (*httptest.Server, string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st := scannedStore(t, dir)
	docs := t.TempDir()
	os.MkdirAll(filepath.Join(docs, ".well-known"), 0o755)
	os.WriteFile(filepath.Join(docs, ".well-known", "resourcesync"), []byte("<urlset/>"), 0o644)
	h := &Handler{Docs: docs, Mount: "/", Sets: []Set{{Prefix: "/", Dir: dir, Store: st, CapabilityList: "http://x/.resourcesync/default/capabilitylist.xml"}}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, dir
}

func TestServeResource(t *testing.T) {
	body := strings.Repeat("hello world\n", 100)
	srv, dir := setup(t, map[string]string{"a/b.txt": body, "sp ace#%?.html": "<p>x</p>", "caf\u00e9.txt": "x"})
	c, _ := testnet.Client(t)
	sum := sha256.Sum256([]byte(body))
	etag := `"` + hex.EncodeToString(sum[:]) + `"`

	get := func(method, path string, hdr map[string]string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := get("GET", "/a/b.txt", nil)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != body {
		t.Fatalf("GET: %d %q", resp.StatusCode, b)
	}
	for k, want := range map[string]string{
		"Content-Type":   "text/plain; charset=utf-8",
		"Content-Length": "1200",
		"ETag":           etag,
		"Link":           `<http://x/.resourcesync/default/capabilitylist.xml>; rel="resourcesync"`,
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	lm := resp.Header.Get("Last-Modified")
	if lm == "" {
		t.Error("no Last-Modified")
	}
	tests := []struct {
		name   string
		method string
		path   string
		hdr    map[string]string
		code   int
		body   string
	}{
		{"HEAD", "HEAD", "/a/b.txt", nil, 200, ""},
		{"Range", "GET", "/a/b.txt", map[string]string{"Range": "bytes=0-4"}, 206, "hello"},
		{"If-None-Match", "GET", "/a/b.txt", map[string]string{"If-None-Match": etag}, 304, ""},
		{"If-None-Match other", "GET", "/a/b.txt", map[string]string{"If-None-Match": `"x"`}, 200, body},
		{"If-Modified-Since", "GET", "/a/b.txt", map[string]string{"If-Modified-Since": lm}, 304, ""},
		{"escaped name", "GET", "/" + scan.EscapePath("sp ace#%?.html"), nil, 200, "<p>x</p>"},
		{"non-ASCII", "GET", "/caf%C3%A9.txt", nil, 200, "x"},
		{"missing", "GET", "/nope", nil, 404, ""},
		{"directory", "GET", "/a/", nil, 404, ""},
		{"traversal", "GET", "/a/..%2F..%2Fetc%2Fpasswd", nil, 404, ""},
		{"document", "GET", "/.well-known/resourcesync", nil, 200, "<urlset/>"},
		{"POST", "POST", "/a/b.txt", nil, 405, ""},
	}
	for _, tt := range tests {
		resp := get(tt.method, tt.path, tt.hdr)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tt.code {
			t.Errorf("%s: status %d, want %d", tt.name, resp.StatusCode, tt.code)
		}
		if tt.body != "" && string(b) != tt.body {
			t.Errorf("%s: body %.20q, want %.20q", tt.name, b, tt.body)
		}
	}
	if ct := get("GET", "/.well-known/resourcesync", nil).Header.Get("Content-Type"); ct != "application/xml" {
		t.Errorf("document Content-Type %q", ct)
	}
	// A file created after the scan is not served until it is scanned.
	os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new"), 0o644)
	if resp := get("GET", "/new.txt", nil); resp.StatusCode != 404 {
		t.Errorf("unscanned file served: %d", resp.StatusCode)
	}
	// A file changed after the scan is not served until it is rescanned:
	// 503 with Retry-After, no stale ETag, not the new bytes.
	time.Sleep(10 * time.Millisecond)
	os.WriteFile(filepath.Join(dir, "a", "b.txt"), []byte("changed"), 0o644)
	resp = get("GET", "/a/b.txt", nil)
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || resp.Header.Get("ETag") != "" || string(b) == "changed" {
		t.Errorf("changed file: %d Retry-After %q ETag %q body %q", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("ETag"), b)
	}
}

// TestServeSwappedForLinks swaps scanned files and directories for
// symbolic links (and a hard link) to files outside DIR after the scan:
// the outside bytes must never be served.
func TestServeSwappedForLinks(t *testing.T) {
	const secret = "OUTSIDE-SECRET"
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(outside, "d"), 0o755)
	os.WriteFile(filepath.Join(outside, "d", "x.txt"), []byte(secret), 0o644)
	srv, dir := setup(t, map[string]string{
		"file.txt": "scanned-1", "d/x.txt": "scanned-2", "inner.txt": "scanned-3", "target.txt": "scanned-4",
		"hard.txt": strings.Repeat("h", len(secret)),
	})
	if err := os.Symlink(filepath.Join(outside, "probe"), filepath.Join(t.TempDir(), "probe")); err != nil {
		t.Skipf("symbolic links cannot be created here: %v", err)
	}
	swap := func(name, target string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.Rename(p, p+".orig"); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	swap("file.txt", filepath.Join(outside, "secret.txt")) // the file itself
	swap("d", filepath.Join(outside, "d"))                 // a directory component
	swap("inner.txt", filepath.Join(dir, "target.txt"))    // a link inside DIR
	c, _ := testnet.Client(t)
	for _, p := range []string{"/file.txt", "/d/x.txt", "/inner.txt"} {
		resp, err := c.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), secret) || strings.Contains(string(b), "scanned-4") {
			t.Errorf("%s: served the link's target: %q", p, b)
		}
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: status %d Retry-After %q, want 503 with Retry-After", p, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	// The target itself is still served.
	if resp, err := c.Get(srv.URL + "/target.txt"); err != nil || resp.StatusCode != 200 {
		t.Errorf("target.txt: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// A hard link to an outside file of the same size and mtime, renamed
	// over a scanned file: only the inode tells them apart.
	hard := filepath.Join(dir, "hard.txt")
	fi, _ := os.Stat(hard)
	link := filepath.Join(outside, "secret-link.txt")
	os.Chtimes(filepath.Join(outside, "secret.txt"), fi.ModTime(), fi.ModTime())
	if err := os.Link(filepath.Join(outside, "secret.txt"), link); err != nil {
		t.Logf("no hard link across these directories (%v): inode case not run", err)
		return
	}
	if err := os.Rename(link, hard); err != nil {
		t.Logf("cannot rename across these directories (%v): inode case not run", err)
		return
	}
	if runtime.GOOS == "windows" {
		return // no inode numbers in FileInfo: size and mtime alone cannot tell
	}
	resp, err := c.Get(srv.URL + "/hard.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(b), secret) || resp.StatusCode != 503 {
		t.Errorf("hard link swapped in: %d %q", resp.StatusCode, b)
	}
}

// TestServeDocumentLink: a link in the document tree is not followed.
func TestServeDocumentLink(t *testing.T) {
	docs, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("OUTSIDE-SECRET"), 0o644)
	os.MkdirAll(filepath.Join(docs, ".well-known"), 0o755)
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(docs, ".well-known", "resourcesync")); err != nil {
		t.Skipf("symbolic links cannot be created here: %v", err)
	}
	os.Symlink(outside, filepath.Join(docs, ".resourcesync"))
	srv := httptest.NewServer(&Handler{Docs: docs, Mount: "/"})
	t.Cleanup(srv.Close)
	c, _ := testnet.Client(t)
	for _, p := range []string{"/.well-known/resourcesync", "/.resourcesync/secret"} {
		resp, err := c.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || strings.Contains(string(b), "SECRET") {
			t.Errorf("%s: %d %q", p, resp.StatusCode, b)
		}
	}
}

// TestSandboxResources: with SandboxResources every resource answer (the
// small-file fast path and the streamed one) says "Content-Security-Policy:
// sandbox"; documents do not (their views carry their own policy), and
// without the setting resources carry none.
func TestSandboxResources(t *testing.T) {
	srv, _ := setup(t, map[string]string{"page.html": "<script>1</script>", "big.bin": strings.Repeat("x", 1<<20)})
	h := srv.Config.Handler.(*Handler)
	c, _ := testnet.Client(t)
	base := srv.URL
	csp := func(path string) string {
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s", path, resp.Status)
		}
		return resp.Header.Get("Content-Security-Policy")
	}
	if got := csp("/page.html"); got != "" {
		t.Errorf("without the setting: %q", got)
	}
	sandboxed := *h // a server of its own: no write racing the first's goroutines
	sandboxed.SandboxResources = true
	srv2 := httptest.NewServer(&sandboxed)
	defer srv2.Close()
	base = srv2.URL
	for _, p := range []string{"/page.html", "/big.bin"} {
		if got := csp(p); got != "sandbox" {
			t.Errorf("%s: Content-Security-Policy %q, want sandbox", p, got)
		}
	}
	if got := csp("/.well-known/resourcesync"); got == "sandbox" {
		t.Errorf("a document is sandboxed")
	}
}

// scannedStore is a bolt state in a temporary directory holding one scan
// of dir (closed when the test ends).
func scannedStore(t testing.TB, dir string) *bolt.DB {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sc, err := scan.New(scan.Options{Root: dir, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}
