package validate

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestDirTransport: URLs under the base map to files of the directory;
// nothing else is read (no dial, no path outside it).
func TestDirTransport(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	os.MkdirAll(filepath.Join(dir, ".well-known"), 0o755)
	os.WriteFile(filepath.Join(dir, ".well-known", "resourcesync"), []byte("<urlset/>"), 0o644)
	os.WriteFile(filepath.Join(dir, "a b.xml"), []byte("<urlset/>"), 0o644)
	os.WriteFile(filepath.Join(parent, "secret.xml"), []byte("secret"), 0o644)
	os.Symlink(filepath.Join(parent, "secret.xml"), filepath.Join(dir, "link.xml"))
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	bu, _ := http.NewRequest("GET", "http://Example.org:80/base/", nil)
	c := &http.Client{Transport: &dirTransport{base: bu.URL, root: root}}
	for _, tc := range []struct {
		url   string
		code  int // 0: an ErrOffline error
		ctype string
	}{
		{"http://example.org/base/.well-known/resourcesync", 200, "application/xml"},
		{"http://EXAMPLE.org:80/base/a%20b.xml", 200, "application/xml"},
		{"http://example.org/base/", 404, ""},
		{"http://example.org/base", 404, ""},
		{"http://example.org/base/.well-known", 404, ""},
		{"http://example.org/base/a%20b.xml?x=1", 404, ""},
		{"http://example.org/base/%2E%2E/secret.xml", 404, ""},
		{"http://example.org/base/link.xml", 404, ""},
		{"http://example.org/base/missing.xml", 404, ""},
		{"http://example.org/other/a.xml", 0, ""},
		{"http://example.org/basement/a.xml", 0, ""},
		{"https://example.org/base/a%20b.xml", 0, ""},
		{"http://example.org:8080/base/a%20b.xml", 0, ""},
		{"http://127.0.0.1/base/a%20b.xml", 0, ""},
	} {
		resp, err := c.Get(tc.url)
		if tc.code == 0 {
			if !errors.Is(err, ErrOffline) {
				t.Errorf("%s: %v, want ErrOffline", tc.url, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code || tc.ctype != "" && resp.Header.Get("Content-Type") != tc.ctype {
			t.Errorf("%s: %d %q, want %d %q", tc.url, resp.StatusCode, resp.Header.Get("Content-Type"), tc.code, tc.ctype)
		}
	}
}
