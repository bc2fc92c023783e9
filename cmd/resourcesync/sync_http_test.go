package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSyncNamedListMissing: a Resource List named explicitly that answers
// 404 fails with exit 2 and a message saying so; the Source's own
// Source Description, found at the host's well-known URL, is not mirrored
// in its place.
func TestSyncNamedListMissing(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	base, _ := serveDir(t, dir)
	dest := filepath.Join(t.TempDir(), "mirror")
	code, out, errOut := runCLI(t, "sync", "--progress", "quiet", base+"other/resourcelist.xml", dest)
	if code != exitUsage || !strings.Contains(errOut, "404") || !strings.Contains(errOut, "no other place is searched") {
		t.Fatalf("exit %d, want %d with the reason\n%s\n%s", code, exitUsage, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dest, "a.txt")); !os.IsNotExist(err) {
		t.Errorf("a.txt was mirrored from the host's Source Description: %v", err)
	}
}

// handSource serves a minimal Source at its root: a Source Description,
// a Capability List and a Resource List naming /a.txt (redirected to
// redirectTo), /b.txt, /c.txt (404, with a rel="duplicate" at dupAt) and
// /slow.txt (sent by slow, when set).
func handSource(t *testing.T, redirectTo, dupAt string, slow http.HandlerFunc) string {
	t.Helper()
	var base string
	mux := http.NewServeMux()
	xml := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/xml")
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">`+
				strings.ReplaceAll(body, "BASE", base)+"</urlset>\n")
		}
	}
	mux.HandleFunc("/.well-known/resourcesync", xml(`<rs:md capability="description"/><url><loc>BASE/cl.xml</loc><rs:md capability="capabilitylist"/></url>`))
	mux.HandleFunc("/cl.xml", xml(`<rs:ln rel="up" href="BASE/.well-known/resourcesync"/><rs:md capability="capabilitylist"/><url><loc>BASE/rl.xml</loc><rs:md capability="resourcelist"/></url>`))
	items := `<url><loc>BASE/a.txt</loc></url><url><loc>BASE/b.txt</loc></url><url><loc>BASE/c.txt</loc><rs:ln rel="duplicate" href="` + dupAt + `" pri="1"/></url>`
	if slow != nil {
		items += `<url><loc>BASE/slow.txt</loc></url>`
		mux.HandleFunc("/slow.txt", slow)
	}
	mux.HandleFunc("/rl.xml", xml(`<rs:ln rel="up" href="BASE/cl.xml"/><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>`+items))
	mux.HandleFunc("/a.txt", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, redirectTo, http.StatusFound) })
	mux.HandleFunc("/b.txt", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "bee") })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base = srv.URL
	return base + "/"
}

// TestSyncOffOrigin: a resource redirected to another loopback port and a
// resource whose only working location is a duplicate there fail (exit
// 1) with the reason, and nothing from the other port lands in DEST;
// --allow-host lets both through.
func TestSyncOffOrigin(t *testing.T) {
	syncLoopbackOnly(t)
	var otherHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		io.WriteString(w, "from elsewhere")
	}))
	defer other.Close()
	base := handSource(t, other.URL+"/x", other.URL+"/copy", nil)
	dest := filepath.Join(t.TempDir(), "mirror")
	code, out, errOut := runCLI(t, "sync", "--progress", "quiet", base, dest)
	if code != exitProblems {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitProblems, out, errOut)
	}
	for _, want := range []string{"redirect to " + other.URL + "/x leaves the Source's authority", "location " + other.URL + "/copy leaves the Source's authority"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dest, "b.txt")); string(b) != "bee" {
		t.Errorf("b.txt: %q %v", b, err)
	}
	for _, f := range []string{"a.txt", "c.txt"} {
		if _, err := os.Stat(filepath.Join(dest, f)); !os.IsNotExist(err) {
			t.Errorf("%s installed from the other origin (%v)", f, err)
		}
	}
	if n := otherHits.Load(); n != 0 {
		t.Errorf("the other origin got %d requests", n)
	}

	code, out, errOut = runCLI(t, "sync", "--progress", "quiet", "--allow-host", strings.TrimPrefix(other.URL, "http://"), base, dest)
	if code != 0 {
		t.Fatalf("--allow-host: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, f := range []string{"a.txt", "c.txt"} {
		if b, _ := os.ReadFile(filepath.Join(dest, f)); string(b) != "from elsewhere" {
			t.Errorf("--allow-host: %s = %q", f, b)
		}
	}
}

// TestSyncTrickle: a resource sent one byte every 10ms is abandoned
// below --min-rate (small window here to keep the test short) instead of
// holding the run; the run ends with exit 1 and the reason.
func TestSyncTrickle(t *testing.T) {
	syncLoopbackOnly(t)
	done := make(chan struct{})
	slow := func(w http.ResponseWriter, r *http.Request) {
		for range 100000 {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	base := handSource(t, "/b.txt", "/b.txt", slow)
	defer close(done)
	dest := filepath.Join(t.TempDir(), "mirror")
	code, out, errOut := runCLI(t, "sync", "--progress", "quiet", "--timeout", "2s", "--min-rate", "1000", "--min-rate-window", "100ms", base, dest)
	if code != exitProblems || !strings.Contains(out, "response too slow") {
		t.Fatalf("exit %d, want %d with the reason\n%s\n%s", code, exitProblems, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dest, "slow.txt")); !os.IsNotExist(err) {
		t.Errorf("slow.txt installed: %v", err)
	}
}

// TestSyncStalledDocument: a Source Description that sends its headers
// and then nothing fails the run after the retries instead of hanging.
func TestSyncStalledDocument(t *testing.T) {
	syncLoopbackOnly(t)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `<?xml version="1.0"?>`)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	defer srv.Close()
	defer close(done)
	code, out, errOut := runCLI(t, "sync", "--progress", "quiet", "--timeout", "100ms", srv.URL+"/.well-known/resourcesync", filepath.Join(t.TempDir(), "m"))
	if code != exitUsage || !strings.Contains(errOut, "response stalled: no bytes for 100ms") {
		t.Fatalf("exit %d, want %d with the reason\n%s\n%s", code, exitUsage, out, errOut)
	}
}
