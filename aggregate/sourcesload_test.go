package aggregate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/origin"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// writeSources writes content to p with the modification time mt.
func writeSources(t *testing.T, p, content string, mt time.Time) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
}

func dests(ss []Source) string {
	var d []string
	for _, s := range ss {
		d = append(d, s.Dest)
	}
	return strings.Join(d, ",")
}

// load calls l.Load (or Reload) and checks what it says.
func load(t *testing.T, l *SourcesLoader, force bool, wantDests string, wantChanged bool) {
	t.Helper()
	f := l.Load
	if force {
		f = l.Reload
	}
	ss, changed, err := f(t.Context())
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := dests(ss); got != wantDests || changed != wantChanged {
		t.Fatalf("Load = %q, changed %v; want %q, changed %v", got, changed, wantDests, wantChanged)
	}
}

func loadErr(t *testing.T, l *SourcesLoader, want string, isSources bool) {
	t.Helper()
	ss, changed, err := l.Load(t.Context())
	if err == nil || !strings.Contains(err.Error(), want) || errors.Is(err, ErrSources) != isSources {
		t.Fatalf("Load = %q, %v, %v; want an error with %q (ErrSources: %v)", dests(ss), changed, err, want, isSources)
	}
}

func TestSourcesLoaderFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sources")
	t0 := time.Now().Add(-time.Hour) // older than racyWindow: the stat is trusted
	writeSources(t, p, "http://a.example/ aa --netrc-file netrc\n", t0)
	l := NewSourcesLoader(p, nil)

	ss, changed, err := l.Load(t.Context())
	if err != nil || !changed || len(ss) != 1 || ss[0].NetrcFile != filepath.Join(dir, "netrc") {
		t.Fatalf("first Load = %+v, %v, %v; want aa with %s", ss, changed, err, filepath.Join(dir, "netrc"))
	}
	load(t, l, false, "aa", false)

	// Same size, same mtime, same file: the stat says unchanged, so the
	// file is not read (this proves the stat is what is looked at)...
	writeSources(t, p, "http://a.example/ bb --netrc-file netrc\n", t0)
	load(t, l, false, "aa", false)
	// ... until a Reload (a SIGHUP) reads it whatever its stat.
	load(t, l, true, "bb", true)
	load(t, l, true, "bb", false)

	// Same size, different content, mtime bumped.
	writeSources(t, p, "http://a.example/ cc --netrc-file netrc\n", t0.Add(time.Minute))
	load(t, l, false, "cc", true)

	// A new file renamed over it (an editor's save), same size and
	// mtime: another inode.
	tmp := filepath.Join(dir, "sources.tmp")
	writeSources(t, tmp, "http://a.example/ dd --netrc-file netrc\n", t0.Add(time.Minute))
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	load(t, l, false, "dd", true)

	// A touch without a change: read, but not changed.
	writeSources(t, p, "http://a.example/ dd --netrc-file netrc\n", t0.Add(2*time.Minute))
	load(t, l, false, "dd", false)

	// A comment changes nothing.
	writeSources(t, p, "# the list\nhttp://a.example/ dd --netrc-file netrc\n", t0.Add(3*time.Minute))
	ss, changed, err = l.Load(t.Context())
	if err != nil || !changed || dests(ss) != "dd" || ss[0].Line != 2 {
		t.Fatalf("Load = %+v, %v, %v; want dd on line 2, changed (the line moved)", ss, changed, err)
	}

	// A bad list: reported once, the previous list stays.
	writeSources(t, p, "http://a.example/ ee --workers x\n", t0.Add(4*time.Minute))
	loadErr(t, l, `sources:1: --workers: bad value "x"`, true)
	load(t, l, false, "dd", false)
	// Touched, read again: still the same error, not said again.
	writeSources(t, p, "http://a.example/ ee --workers x\n", t0.Add(4*time.Minute+time.Second))
	load(t, l, false, "dd", false)
	load(t, l, false, "dd", false)
	// A SIGHUP reports it again.
	if _, _, err := l.Reload(t.Context()); !errors.Is(err, ErrSources) {
		t.Fatalf("Reload of a bad list: %v", err)
	}
	// Fixed: changed, even though the list is the one in force (the
	// caller clears the error it shows).
	writeSources(t, p, "# the list\nhttp://a.example/ dd --netrc-file netrc\n", t0.Add(5*time.Minute))
	load(t, l, false, "dd", true)

	// The file gone: an error, not of the list; back with the same stat:
	// changed, to clear the error.
	if err := os.Rename(p, tmp); err != nil {
		t.Fatal(err)
	}
	loadErr(t, l, "no such file", false)
	load(t, l, false, "dd", false) // said once
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	load(t, l, false, "dd", true)
	load(t, l, false, "dd", false)

	// A bad list, then a failed read, then the same bad list: said again.
	writeSources(t, p, "http://a.example/ ../ff\n", t0.Add(6*time.Minute))
	loadErr(t, l, "leaves --root", true)
	if err := os.Rename(p, tmp); err != nil {
		t.Fatal(err)
	}
	loadErr(t, l, "no such file", false)
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	loadErr(t, l, "leaves --root", true)
	load(t, l, false, "dd", false)
}

// TestSourcesLoaderRacyFile: a file modified within its mtime's
// granularity of the read is read again even though its stat is the same;
// one modified a moment ago is not read yet (it may be half written).
func TestSourcesLoaderRacyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sources")
	now := time.Now().Add(-3 * settleTime / 2) // settled, but racy
	writeSources(t, p, "http://a.example/ aa\n", now)
	l := NewSourcesLoader(p, nil)
	load(t, l, false, "aa", true)
	writeSources(t, p, "http://a.example/ bb\n", now)
	load(t, l, false, "bb", true)

	writeSources(t, p, "http://a.example/ b", time.Now())
	load(t, l, false, "bb", false)
	load(t, l, true, "b", true) // a Reload reads it all the same
}

func TestSourcesLoaderFileTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sources")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxSourcesSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(p, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	l := NewSourcesLoader(p, nil)
	loadErr(t, l, "larger than 16 MiB", true)
	load(t, l, false, "", false) // said once
}

// sourcesServer serves a sources list with an ETag and a Last-Modified.
type sourcesServer struct {
	mu          sync.Mutex
	body        string
	version     int
	status      int // other than 200, when set
	conditional []string
}

func (s *sourcesServer) set(body string) {
	s.mu.Lock()
	s.body, s.status = body, 0
	s.version++
	s.mu.Unlock()
}

func (s *sourcesServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conditional = append(s.conditional, r.Header.Get("If-None-Match")+"|"+r.Header.Get("If-Modified-Since"))
	if s.status != 0 {
		w.WriteHeader(s.status)
		return
	}
	etag := fmt.Sprintf(`"v%d"`, s.version)
	lm := time.Date(2026, 1, 1, 0, s.version, 0, 0, time.UTC).Format(http.TimeFormat)
	w.Header().Set("ETag", etag)
	w.Header().Set("Last-Modified", lm)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprint(w, s.body)
}

func (s *sourcesServer) lastConditional() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conditional[len(s.conditional)-1]
}

func TestSourcesLoaderURL(t *testing.T) {
	s := &sourcesServer{}
	s.set("http://a.example/ aa\n")
	srv := httptest.NewServer(s)
	defer srv.Close()
	client, _ := testnet.Client(t)
	l := NewSourcesLoaderWith(srv.URL+"/sources.txt", client, RemoteSources{AllowHTTP: true})

	load(t, l, false, "aa", true)
	if c := s.lastConditional(); c != "|" {
		t.Errorf("first GET sent validators %q", c)
	}
	load(t, l, false, "aa", false)
	if c := s.lastConditional(); c != `"v1"|Thu, 01 Jan 2026 00:01:00 GMT` {
		t.Errorf("second GET sent validators %q, want the first response's", c)
	}
	s.set("http://a.example/ aa\nhttp://b.example/ bb\n")
	load(t, l, false, "aa,bb", true)
	// A Reload GETs unconditionally.
	load(t, l, true, "aa,bb", false)
	if c := s.lastConditional(); c != "|" {
		t.Errorf("Reload sent validators %q", c)
	}

	// A server error: reported, the list stays; then 304: changed again
	// (the caller clears the error).
	s.mu.Lock()
	s.status = http.StatusServiceUnavailable
	s.mu.Unlock()
	loadErr(t, l, "503 Service Unavailable", false)
	s.mu.Lock()
	s.status = 0
	s.mu.Unlock()
	load(t, l, false, "aa,bb", true)

	// A list from a URL names no local file unless a directory is allowed.
	s.set("http://a.example/ aa --ca-cert ca.pem\n")
	loadErr(t, l, `sources:1: --ca-cert: "ca.pem": a sources list read from a URL may not name local files`, true)
	load(t, l, false, "aa,bb", false) // 304 on the bad list: said once
}

func TestSourcesLoaderURLOffOrigin(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "http://evil.example/ ../../etc\n")
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/sources.txt", http.StatusFound)
			return
		}
		if r.URL.Path == "/sources.txt" {
			fmt.Fprint(w, "http://a.example/ aa\n")
			return
		}
		http.Redirect(w, r, other.URL+"/sources.txt", http.StatusFound)
	}))
	defer srv.Close()
	client, _ := testnet.Client(t)

	load(t, NewSourcesLoaderWith(srv.URL+"/moved", client, RemoteSources{AllowHTTP: true}), false, "aa", true)

	_, _, err := NewSourcesLoaderWith(srv.URL+"/elsewhere", client, RemoteSources{AllowHTTP: true}).Load(t.Context())
	if !errors.Is(err, origin.ErrOffOrigin) || errors.Is(err, ErrSources) {
		t.Fatalf("off-origin redirect: %v; want ErrOffOrigin", err)
	}
}

func TestSourcesLoaderURLTooLarge(t *testing.T) {
	line := "http://a.example/ a\n"
	for _, declared := range []bool{true, false} {
		t.Run(fmt.Sprintf("declared=%v", declared), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := MaxSourcesSize/len(line) + 1
				if declared {
					w.Header().Set("Content-Length", fmt.Sprint(n*len(line)))
				}
				for range n {
					if _, err := fmt.Fprint(w, line); err != nil {
						return
					}
				}
			}))
			defer srv.Close()
			client, _ := testnet.Client(t)
			loadErr(t, NewSourcesLoaderWith(srv.URL+"/", client, RemoteSources{AllowHTTP: true}), "larger than 16 MiB", true)
		})
	}
}

func TestWatchSources(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sources")
	t0 := time.Now().Add(-time.Hour)
	writeSources(t, p, "http://a.example/ aa\n", t0)
	l := NewSourcesLoader(p, nil)

	applied := make(chan string, 10)
	failed := make(chan error, 10)
	hup := make(chan os.Signal, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		// No ticker: only the start and the signals load.
		WatchSources(ctx, l, 0, hup, func(ss []Source) { applied <- dests(ss) }, func(err error) { failed <- err })
	}()
	if got := <-applied; got != "aa" {
		t.Fatalf("applied %q at start, want aa", got)
	}
	// Same stat, other content: only a signal makes it seen.
	writeSources(t, p, "http://a.example/ bb\n", t0)
	hup <- sigHUP{}
	if got := <-applied; got != "bb" {
		t.Fatalf("applied %q after a signal, want bb", got)
	}
	writeSources(t, p, "http://a.example/ cc --sdshare --follow\n", t0.Add(time.Minute))
	hup <- sigHUP{}
	if err := <-failed; !errors.Is(err, ErrSources) || !strings.Contains(err.Error(), "--sdshare excludes --follow") {
		t.Fatalf("failed with %v", err)
	}
	writeSources(t, p, "http://a.example/ dd\n", t0.Add(2*time.Minute))
	hup <- sigHUP{}
	if got := <-applied; got != "dd" {
		t.Fatalf("applied %q, want dd", got)
	}
	cancel()
	<-done
	select {
	case got := <-applied:
		t.Errorf("also applied %q", got)
	case err := <-failed:
		t.Errorf("also failed with %v", err)
	default:
	}
}

// TestWatchSourcesPolls: with an interval, a change is picked up without a
// signal.
func TestWatchSourcesPolls(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sources")
	t0 := time.Now().Add(-time.Hour)
	writeSources(t, p, "http://a.example/ aa\n", t0)
	l := NewSourcesLoader(p, nil)
	if _, _, err := l.Load(t.Context()); err != nil { // as the command does, to fail at start
		t.Fatal(err)
	}
	applied := make(chan string, 10)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go WatchSources(ctx, l, 10*time.Millisecond, nil, func(ss []Source) { applied <- dests(ss) }, func(err error) { t.Error(err) })
	// Written as it should be, to another file renamed over it: a file
	// written in place may be read half written (even with its old mtime,
	// for a moment after the truncation, on Linux's ext4).
	tmp := p + ".tmp"
	writeSources(t, tmp, "http://a.example/ bb\n", t0.Add(time.Minute))
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	// The list loaded before is not applied again: bb is the first.
	if got := <-applied; got != "bb" {
		t.Fatalf("applied %q, want bb", got)
	}
}

type sigHUP struct{}

func (sigHUP) String() string { return "hangup" }
func (sigHUP) Signal()        {}

// TestSourcesLoaderURLRedacted: the errors of a sources URL name it
// without its credentials (a userinfo password, a ?token=).
func TestSourcesLoaderURLRedacted(t *testing.T) {
	const secret = "s3cr3t-pw"
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	client, _ := testnet.Client(t)
	for _, tc := range []struct {
		name, url string
		allow     bool
	}{
		{"plain http refused", "http://u:" + secret + "@" + host + "/s?token=" + secret, false},
		{"404", "http://u:" + secret + "@" + host + "/s?token=" + secret, true},
		{"connection refused", "http://" + closed + "/s?token=" + secret, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewSourcesLoaderWith(tc.url, client, RemoteSources{AllowHTTP: tc.allow})
			_, _, err := l.Load(t.Context())
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), l.String()} {
				if strings.Contains(s, secret) {
					t.Errorf("holds the secret: %s", s)
				}
			}
		})
	}
}
