package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSyncSchemelessSource: a SOURCE typed without its scheme is taken as
// https://, as curl and wget do, and the command says so; one that reads
// as a local path is not.
func TestSyncSchemelessSource(t *testing.T) {
	syncLoopbackOnly(t)
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	typed := strings.TrimPrefix(srv.URL, "https://") + "/rs"
	_, _, stderr := runCLI(t, "sync", "--insecure", "--progress", "quiet", typed, t.TempDir())
	want := "taking " + typed + " as https://" + typed + "\n"
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	if hits.Load() == 0 {
		t.Errorf("the https server got no request:\n%s", stderr)
	}

	// A name that exists here is a path, not a host.
	wd := t.TempDir()
	t.Chdir(wd)
	os.MkdirAll(filepath.Join(wd, "example.org"), 0o755)
	_, _, stderr = runCLI(t, "sync", "--progress", "quiet", "example.org", t.TempDir())
	if strings.Contains(stderr, "taking ") {
		t.Errorf("a local directory was taken as a URL:\n%s", stderr)
	}
}
