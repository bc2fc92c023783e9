package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source"
)

// TestSyncBaselineChangeList503: the resync-simulator's behaviour (its
// Change List answers 5xx until its first change) through the command:
// the baseline lands, the run exits 1 naming the Change List, and once
// the list answers the next run exits 0 (issue 19, 5c).
func TestSyncBaselineChangeList503(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	src, err := source.Open(source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(),
		ChangeListPeriod: time.Hour, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	var failing atomic.Bool
	failing.Store(true)
	h := src.Handler(nil)
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() && strings.HasSuffix(r.URL.Path, "/changelist.xml") {
			http.Error(w, "no changes yet", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})}}
	srv.Start()
	defer srv.Close()

	dest := t.TempDir()
	code, out, errOut := runCLI(t, "sync", "--progress", "quiet", "--no-dump", base, dest)
	if code != 1 || !strings.Contains(out, "/changelist.xml: ") || !strings.Contains(out, "503") {
		t.Fatalf("want exit 1 naming the Change List: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "a.txt")); err != nil || string(b) != "a" {
		t.Fatalf("the baseline did not land: %q, %v\n%s", b, err, out)
	}
	t.Logf("%s", out)

	failing.Store(false)
	time.Sleep(5 * time.Millisecond)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b"), 0o644)
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "sync", "--progress", "quiet", base, dest)
	if code != 0 || !strings.Contains(out, "incremental") {
		t.Fatalf("after the Change List recovered: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
