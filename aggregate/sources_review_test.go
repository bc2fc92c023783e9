package aggregate

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/origin"
)

// TestSourcesLoaderHTTPSRedirectToHTTP: an https sources URL that
// redirects to plain http on the same host and port range is not
// followed (the redirect leaves the URL's scheme), so --allow-http-sources
// cannot be bypassed by the list's server.
func TestSourcesLoaderHTTPSRedirectToHTTP(t *testing.T) {
	var plainHits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainHits.Add(1)
		fmt.Fprint(w, "https://a.example/ aa --bearer-token-file tok\n")
	}))
	defer plain.Close()
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Same host, plain http: the scheme (and port) change.
		http.Redirect(w, r, plain.URL+"/sources.txt", http.StatusFound)
	}))
	defer tls.Close()
	_, _, err := NewSourcesLoaderWith(tls.URL+"/sources.txt", tls.Client(), RemoteSources{}).Load(t.Context())
	if !errors.Is(err, origin.ErrOffOrigin) || plainHits.Load() != 0 {
		t.Fatalf("https → http redirect: %v after %d plain GETs; want ErrOffOrigin before any", err, plainHits.Load())
	}
}

// TestParseRemoteSourcesOddNames: names a hostile list may try inside
// --sources-files-dir. A URL-encoded "..", a Windows drive or UNC path
// and a device name never resolve outside the directory (on Linux they
// are plain, missing file names; on Windows they are refused).
func TestParseRemoteSourcesOddNames(t *testing.T) {
	allowed := t.TempDir()
	if err := os.WriteFile(filepath.Join(allowed, "tok"), []byte("t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(allowed)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"%2e%2e/%2e%2e/etc/passwd", "..%2f..%2fetc%2fpasswd", `"C:\\Windows\\win.ini"`, "C:/Windows/win.ini", "C:tok",
		`"\\\\host\\share\\tok"`, "//host/share/tok", `"\\\\?\\C:\\tok"`, "NUL", "COM1", "CONIN$", "tok/..", ".",
	} {
		ss, err := ParseRemoteSources(strings.NewReader("https://a.example/ a --bearer-token-file "+name+"\n"), allowed)
		if err != nil {
			continue
		}
		p := ss[0].BearerTokenFile
		if rel, rerr := filepath.Rel(real, p); rerr != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			t.Errorf("%s: resolved to %q, not a file inside %q", name, p, real)
		}
	}
}
