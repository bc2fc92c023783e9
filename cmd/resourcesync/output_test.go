package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/source"
)

// Tests that the CLI's output tells the truth: exact lines present or
// absent, and exit codes.

func runCLICtx(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(ctx, append([]string{"resourcesync"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// stateLine matches the final line of a sync report that claims success.
var inSyncLine = regexp.MustCompile(`(?m): in sync \(`)

func writeFiles(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)), []byte(strings.Repeat("x", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sourceServer serves a Source over dir, with wrap around its handler
// (and without the bulk GET, which would go round wrap).
func sourceServer(t *testing.T, dir string, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	src, err := source.Open(source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(),
		ChangeListPeriod: time.Hour, Logger: discardLogger(),
		NoBulk: true}) // wrap acts on the resources' GETs: the bulk GET would go round it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: wrap(src.Handler(nil))}}
	srv.Start()
	t.Cleanup(srv.Close)
	return base
}

// isDoc tells the requests of discovery and documents from those of the
// resources (writeFiles's *.txt).
func isDoc(r *http.Request) bool { return !strings.HasSuffix(r.URL.Path, ".txt") }

// TestSyncSummaryOnce: each set's summary line is printed once, on stdout,
// not again by the progress display.
func TestSyncSummaryOnce(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	writeFiles(t, dir, 12)
	base := sourceServer(t, dir, func(h http.Handler) http.Handler { return h })
	dest := filepath.Join(t.TempDir(), "mirror")
	code, out, errOut := runCLI(t, "sync", "--progress", "lines", base, dest)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	all := out + errOut
	if n := strings.Count(all, "fetched 12"); n != 1 {
		t.Errorf("the summary appears %d times, want once:\nstdout:\n%s\nstderr:\n%s", n, out, errOut)
	}
	if !regexp.MustCompile(`(?m)^set default: baseline\S*: fetched 12 `).MatchString(out) || !inSyncLine.MatchString(out) {
		t.Errorf("stdout lacks the summary or the state line:\n%s", out)
	}
}

// TestSyncInterrupted: a run cancelled (SIGTERM, Ctrl-C) while fetching
// says "interrupted", never "in sync", and exits 1.
func TestSyncInterrupted(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	writeFiles(t, dir, 20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	base := sourceServer(t, dir, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isDoc(r) {
				h.ServeHTTP(w, r)
				return
			}
			once.Do(cancel) // the signal arrives while resources are being fetched
			<-r.Context().Done()
		})
	})
	dest := filepath.Join(t.TempDir(), "mirror")
	code, out, errOut := runCLICtx(ctx, "sync", "--progress", "quiet", base, dest)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	if inSyncLine.MatchString(out) || !strings.Contains(out, dest+": interrupted (") {
		t.Errorf("stdout does not say interrupted (or says in sync):\n%s", out)
	}
	if !strings.Contains(errOut, "resourcesync: interrupted; the next run resumes where this one stopped") {
		t.Errorf("stderr:\n%s", errOut)
	}
}

// TestSyncHeaderTimeout: a Source that sends no response headers within
// --timeout is a failure (exit 2, the timeout named), not an interruption.
func TestSyncHeaderTimeout(t *testing.T) {
	old := syncClient
	t.Cleanup(func() { syncClient = old })
	_, g := testnet.Client(t)
	syncClient = func(_ int, timeout time.Duration) *http.Client {
		tr := g.Transport()
		tr.ResponseHeaderTimeout = timeout
		return &http.Client{Transport: tr}
	}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	dest := filepath.Join(t.TempDir(), "mirror")
	code, out, errOut := runCLI(t, "sync", "--progress", "quiet", "--timeout", "200ms", srv.URL+"/", dest)
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if strings.Contains(out+errOut, "interrupted") || inSyncLine.MatchString(out) {
		t.Errorf("a timeout reported as an interruption or success:\nstdout:\n%s\nstderr:\n%s", out, errOut)
	}
	if !strings.Contains(errOut, "timeout awaiting response headers") {
		t.Errorf("stderr does not name the timeout:\n%s", errOut)
	}
}

// TestSyncErrorNotInSync: a run that ends with an error (exit 2) after a
// report exists never prints "in sync".
func TestSyncErrorNotInSync(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	writeFiles(t, dir, 5)
	base := sourceServer(t, dir, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/resourcelist.xml") || strings.Contains(r.URL.Path, "/resourcelists/") || strings.Contains(r.URL.Path, "resourcedump") {
				http.Error(w, "gone", http.StatusGone)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	dest := filepath.Join(t.TempDir(), "mirror")
	code, out, errOut := runCLI(t, "sync", "--progress", "quiet", base, dest)
	if code == 0 {
		t.Fatalf("exit 0 without a Resource List\n%s\n%s", out, errOut)
	}
	if inSyncLine.MatchString(out) {
		t.Errorf("exit %d but stdout says in sync:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
}

// TestValidateMissingFile: a file that cannot be read is not "validated
// with 0 errors": no summary line, the reason on stderr, exit 2.
func TestValidateMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.xml")
	code, out, errOut := runCLI(t, "validate", missing)
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing (no \"0 errors\" line)", out)
	}
	if want := "resourcesync validate: " + missing + ": not validated: open " + missing + ": no such file or directory\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

// TestValidateBaseWithHTMLHome: validate BASE/ where BASE/ is an HTML home
// page walks the Source found at /.well-known/resourcesync.
func TestValidateBaseWithHTMLHome(t *testing.T) {
	loopbackOnly(t)
	dir, out := t.TempDir(), t.TempDir()
	writeFiles(t, dir, 3)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	if code, o, e := runCLI(t, "publish", "--base-url", base, "--out", out, "--state", t.TempDir(), dir); code != 0 {
		t.Fatalf("publish: exit %d\n%s\n%s", code, o, e)
	}
	files := http.FileServer(http.Dir(out))
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte("<!DOCTYPE html>\n<html><body><h1>Welcome</h1></body></html>\n"))
			return
		}
		files.ServeHTTP(w, r)
	})}}
	srv.Start()
	defer srv.Close()
	code, stdout, errOut := runCLI(t, "validate", base)
	if code != 0 {
		t.Errorf("exit %d, want 0\n%s\n%s", code, stdout, errOut)
	}
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(base) + `: ([5-9]|\d\d+) documents, \d+ entries, 0 errors, 0 warnings$`).MatchString(stdout) {
		t.Errorf("no summary line of a walked tree:\n%s\n%s", stdout, errOut)
	}
}

// TestPublishQuiet: publish prints one result line and no INFO log lines
// unless -v.
func TestPublishQuiet(t *testing.T) {
	dir, out, state := t.TempDir(), t.TempDir(), t.TempDir()
	writeFiles(t, dir, 3)
	args := []string{"publish", "--base-url", "http://127.0.0.1:1/", "--out", out, "--state", state, dir}
	code, stdout, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, errOut)
	}
	line := regexp.MustCompile(`^published 3 resources \(baseline\) to ` + regexp.QuoteMeta(out) + ` in [0-9.]+m?s; Source Description: http://127\.0\.0\.1:1/\.well-known/resourcesync\n$`)
	if !line.MatchString(stdout) || errOut != "" {
		t.Errorf("first publish: stdout %q, stderr %q; want one result line and nothing else", stdout, errOut)
	}
	// A change, then -v: a line per set and the log.
	os.Remove(filepath.Join(dir, "f00.txt"))
	os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new"), 0o644)
	code, stdout, errOut = runCLI(t, append([]string{"publish", "-v"}, args[1:]...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, errOut)
	}
	if !strings.Contains(stdout, "set default: 3 resources (1 created, 0 updated, 1 deleted), 1 Change Lists") ||
		!strings.Contains(stdout, "published 3 resources (1 created, 0 updated, 1 deleted) to ") {
		t.Errorf("-v stdout:\n%s", stdout)
	}
	if !strings.Contains(errOut, "level=INFO") {
		t.Errorf("-v shows no log lines:\n%s", errOut)
	}
	// Without -v again: the INFO lines (a new Resource List is written) stay out.
	os.WriteFile(filepath.Join(dir, "new2.txt"), []byte("new2"), 0o644)
	code, stdout, errOut = runCLI(t, args...)
	if code != 0 || strings.Contains(errOut, "INFO") || strings.Count(stdout, "\n") != 1 || !strings.HasPrefix(stdout, "published 4 resources (1 created, 0 updated, 0 deleted)") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
}
