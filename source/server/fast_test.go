package server

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// The general path (http.ServeContent for every resource) answers as the
// fast one for small files does: the same tests with it switched off.
func TestServeGeneralPath(t *testing.T) {
	noFastPath = true
	defer func() { noFastPath = false }()
	t.Run("Resource", TestServeResource)
	t.Run("SwappedForLinks", TestServeSwappedForLinks)
	t.Run("SmallAndLarge", TestServeSmallAndLarge)
}

// A small resource's GET (the fast path on Linux) carries the headers a
// HEAD (always http.ServeContent) does; a large one is served whole; a
// set directory reached through a symbolic link of the configuration is
// served.
func TestServeSmallAndLarge(t *testing.T) {
	small, large := "small bytes", strings.Repeat("0123456789abcdef", 70000/16)
	srv, dir := setup(t, map[string]string{"s.bin": small, "d/l.bin": large})
	c, _ := testnet.Client(t)
	do := func(method, url string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	for name, want := range map[string]string{"/s.bin": small, "/d/l.bin": large} {
		get, body := do("GET", srv.URL+name)
		head, _ := do("HEAD", srv.URL+name)
		if get.StatusCode != 200 || body != want {
			t.Fatalf("GET %s: %d, %d bytes", name, get.StatusCode, len(body))
		}
		for _, k := range []string{"Content-Type", "Content-Length", "ETag", "Link", "Last-Modified", "Accept-Ranges"} {
			if g, h := get.Header.Get(k), head.Header.Get(k); g != h || g == "" {
				t.Errorf("%s: GET %s %q, HEAD %q", name, k, g, h)
			}
		}
	}
	// The same set through a link to its directory (as a configuration
	// may name it): links above the set's directory are the operator's.
	h := srv.Config.Handler.(*Handler)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Skip(err)
	}
	h.Sets[0].Dir = link
	if resp, body := do("GET", srv.URL+"/s.bin"); resp.StatusCode != 200 || body != small {
		t.Errorf("through a linked set directory: %d %q", resp.StatusCode, body)
	}
}
