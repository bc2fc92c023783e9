package server

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/bulk"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// TestBulk: the endpoint answers each path asked, in order, with the
// bytes a GET gives, and with a status and no bytes whatever a GET would
// not answer 200 to (outside the inventory, ".." and escapes, documents,
// too large, changed since the scan); it is advertised on the documents.
func TestBulk(t *testing.T) {
	big := strings.Repeat("b", bulk.MaxMember+1)
	srv, dir := setup(t, map[string]string{"a/b.txt": "hello", "sp ace.txt": "x y", "big.bin": big, "changed.txt": "old"})
	os.WriteFile(filepath.Join(dir, "changed.txt"), []byte("new!"), 0o644)
	os.WriteFile(filepath.Join(dir, "unscanned.txt"), []byte("later"), 0o644)
	c, _ := testnet.Client(t)
	paths := []string{"a/b.txt", "sp%20ace.txt", "a/../a/b.txt", "a/%2e%2e/big.bin", "../etc/passwd", ".well-known/resourcesync",
		"big.bin", "changed.txt", "unscanned.txt", "a/b.txt"}
	var body strings.Builder
	bulk.WriteRequest(&body, paths)
	resp, err := c.Post(srv.URL+"/"+bulk.Path, "text/plain", strings.NewReader(body.String()))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != bulk.MediaType {
		t.Fatalf("%s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	want := map[string]string{"a/b.txt": "hello", "sp%20ace.txt": "x y"}
	wantStatus := []int{200, 200, 404, 404, 404, 404, 413, 503, 404, 200}
	if runtime.GOOS == "windows" {
		wantStatus[7] = 0 // mtime-only change detection varies; not asserted
	}
	r := bulk.NewReader(resp.Body, paths)
	for i, p := range paths {
		m, err := r.Next(int64(len(want[p])))
		if err != nil {
			t.Fatalf("member %d (%s): %v", i, p, err)
		}
		if wantStatus[i] != 0 && m.Status != wantStatus[i] {
			t.Errorf("%s: status %d, want %d", p, m.Status, wantStatus[i])
		}
		if m.Status == 200 {
			b, _ := io.ReadAll(m.Body)
			if string(b) != want[p] {
				t.Errorf("%s: %q", p, b)
			}
		}
	}
	if _, err := r.Next(0); err != io.EOF {
		t.Errorf("end: %v", err)
	}

	// Advertised on the documents, as a Link header only.
	doc, err := c.Get(srv.URL + "/.well-known/resourcesync")
	if err != nil {
		t.Fatal(err)
	}
	doc.Body.Close()
	if l := strings.Join(doc.Header.Values("Link"), ", "); !strings.Contains(l, "</"+bulk.Path+`>; rel="`+bulk.Rel+`"`) {
		t.Errorf("document Link headers %q", l)
	}
	// A GET of the endpoint, or a request too large, is refused.
	if g, err := c.Get(srv.URL + "/" + bulk.Path); err != nil || g.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %v %v", g.Status, err)
	} else {
		g.Body.Close()
	}
	bad, err := c.Post(srv.URL+"/"+bulk.Path, "text/plain", strings.NewReader(strings.Repeat("a\n", bulk.MaxPaths+1)))
	if err != nil || bad.StatusCode != http.StatusBadRequest {
		t.Errorf("too many paths: %v %v", bad.Status, err)
	} else {
		bad.Body.Close()
	}
}

// TestBulkOff: with NoBulk, neither the endpoint nor its Link header.
func TestBulkOff(t *testing.T) {
	srv, _ := setup(t, map[string]string{"a.txt": "a"})
	srv.Config.Handler.(*Handler).NoBulk = true
	c, _ := testnet.Client(t)
	resp, err := c.Post(srv.URL+"/"+bulk.Path, "text/plain", strings.NewReader("a.txt\n"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == 200 {
		t.Error("bulk answered with NoBulk")
	}
	doc, err := c.Get(srv.URL + "/.well-known/resourcesync")
	if err != nil {
		t.Fatal(err)
	}
	doc.Body.Close()
	if strings.Contains(strings.Join(doc.Header.Values("Link"), ","), bulk.Rel) {
		t.Error("advertised with NoBulk")
	}
}
