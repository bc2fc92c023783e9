package main

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/client"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
)

// Hostile SDShare servers against `sdshare sync` (issue 24, items 1, 4
// and 5). Each run has its own context deadline: a client that hangs or
// overstays shows as an interrupted run, not as a slow test.

// hostileSDShare serves one collection (snapshot at 2020-06-01) whose
// handlers the test replaces by path.
type hostileSDShare struct {
	srv  *httptest.Server
	mu   sync.Mutex
	h    map[string]http.HandlerFunc
	hits map[string]int
}

func newHostileSDShare(t *testing.T) *hostileSDShare {
	const ns = "http://www.sdshare.org/2012/core/"
	m := &hostileSDShare{h: map[string]http.HandlerFunc{}, hits: map[string]int{}}
	atomDoc := func(doc string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/atom+xml")
			w.Write([]byte(doc))
		}
	}
	m.h["/"] = atomDoc(atomFeed(atomEntry("2020-01-01T00:00:00Z", "", ns+"collectionfeed", "/c")))
	m.h["/c"] = atomDoc(atomFeed(atomEntry("2020-01-01T00:00:00Z", "", ns+"snapshotsfeed", "/s") + atomEntry("2020-01-01T00:00:00Z", "", ns+"fragmentsfeed", "/f")))
	m.h["/s"] = atomDoc(atomFeed(atomEntry("2020-06-01T00:00:00Z", "", ns+"snapshot", "/snap")))
	m.h["/f"] = atomDoc(atomFeed(atomEntry("2020-06-02T00:00:00Z", "http://x/a", ns+"fragment", "/frag/a")))
	m.h["/snap"] = ntDoc("<http://x/a> <http://x/p> \"0\" .\n")
	m.h["/frag/a"] = ntDoc("<http://x/a> <http://x/p> \"1\" .\n")
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		h, ok := m.h[r.URL.Path]
		m.hits[r.URL.Path]++
		m.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func ntDoc(doc string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/n-triples")
		w.Write([]byte(doc))
	}
}

func (m *hostileSDShare) set(path string, h http.HandlerFunc) {
	m.mu.Lock()
	m.h[path] = h
	m.mu.Unlock()
}

func (m *hostileSDShare) count(path string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hits[path]
}

// stall sends the headers and the first bytes of a body, then nothing
// until the client gives up (or the test ends).
func stall(t *testing.T, contentType, first string) http.HandlerFunc {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) }) // runs before the server's Close
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(first))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}
}

// Item 1: a body that stalls after its headers, whatever the document
// (feed, snapshot, fragment), fails with "response stalled" after
// --timeout (and its retries) instead of hanging.
func TestSDShareSyncHostileStall(t *testing.T) {
	s := memstore.New()
	t.Cleanup(func() { s.Close() }) // after the parallel subtests
	useTestStores(t, s)
	for _, tc := range []struct {
		name, path, ct, first string
		code                  int
	}{
		{"overview feed", "/", "application/atom+xml", "<feed xmlns=\"http://www.w3.org/2005/Atom\">", 2},
		{"snapshot", "/snap", "application/n-triples", "<http://x/a> <http://x/p> ", 1},
		{"fragment", "/frag/a", "application/n-triples", "<http://x/a> ", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newHostileSDShare(t)
			m.set(tc.path, stall(t, tc.ct, tc.first))
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			code, out, errOut := runCLICtx(ctx, "sdshare", "sync", "--state", t.TempDir(), "--timeout", "1s", "--min-rate", "0", m.srv.URL+"/")
			if ctx.Err() != nil {
				t.Fatalf("still running at the test's deadline (a stalled body hangs the client)\nstdout %s\nstderr %s", out, errOut)
			}
			if code != tc.code || !strings.Contains(errOut, "response stalled: no bytes for 1s") {
				t.Errorf("exit %d, want %d with \"response stalled\"\nstdout %s\nstderr %s", code, tc.code, out, errOut)
			}
		})
	}
}

// Item 4: a snapshot answered 202 forever fails at the --max-wait
// deadline, retries included, with an error saying so; the client does
// not start the wait over (on main: five waits of --max-wait).
func TestSDShareSyncHostileAcceptedForever(t *testing.T) {
	s := memstore.New()
	defer s.Close()
	useTestStores(t, s)
	m := newHostileSDShare(t)
	m.set("/snap", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusAccepted)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	state := t.TempDir()
	code, out, errOut := runCLICtx(ctx, "sdshare", "sync", "--state", state, "--max-wait", "2s", m.srv.URL+"/")
	if ctx.Err() != nil {
		t.Fatalf("still waiting at the test's deadline\nstdout %s\nstderr %s", out, errOut)
	}
	if code != 1 || !strings.Contains(errOut, "not ready by the --max-wait deadline (2s)") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	// Retry-After 1 s within a 2 s deadline: at most three requests.
	if n := m.count("/snap"); n > 3 {
		t.Errorf("%d requests for the snapshot within a 2s deadline of 1s waits: the wait was started over", n)
	}
	if m.count("/f") != 0 {
		t.Errorf("fragments read without a snapshot")
	}
}

// Item 4 again: a server that answers 202 until just before the deadline,
// then a body that breaks off, has the document retried as a transfer
// failure; the retry still waits within the deadline of the first 202,
// not a new one (before, each of the five attempts waited --max-wait
// anew), whether the document is a snapshot or a fragment.
func TestSDShareSyncHostileAcceptedThenBroken(t *testing.T) {
	for _, path := range []string{"/snap", "/frag/a"} {
		t.Run(path, func(t *testing.T) {
			s := memstore.New()
			defer s.Close()
			useTestStores(t, s)
			m := newHostileSDShare(t)
			var mu sync.Mutex
			accepted := 0
			m.set(path, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				accepted++
				odd := accepted%2 == 1
				mu.Unlock()
				if odd {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(http.StatusAccepted)
					return
				}
				w.Header().Set("Content-Type", "application/n-triples")
				w.Header().Set("Content-Length", "1000")
				w.Write([]byte("<http://x/a> <http://x/p> "))
			})
			state := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			code, out, errOut := runCLICtx(ctx, "sdshare", "sync", "--state", state, "--max-wait", "2s", m.srv.URL+"/")
			if ctx.Err() != nil {
				t.Fatalf("still waiting at the test's deadline\nstdout %s\nstderr %s", out, errOut)
			}
			if code != 1 || !strings.Contains(errOut, "not ready by the --max-wait deadline (2s)") {
				t.Errorf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
			}
			// Retry-After 1 s within a 2 s deadline: at most two 202s
			// and one broken body in between.
			mu.Lock()
			n := accepted
			mu.Unlock()
			if n > 3 {
				t.Errorf("%d requests for %s within a 2s deadline of 1s waits: the wait was started over", n, path)
			}
		})
	}
}

// Item 5: an entry dated 9999-12-31 is applied but does not carry t past
// the feed's updated (or now plus the skew), is reported, and a genuine
// change after it is applied on the next run.
func TestSDShareSyncHostileFutureEntry(t *testing.T) {
	const ns = "http://www.sdshare.org/2012/core/"
	s := memstore.New()
	defer s.Close()
	useTestStores(t, s)
	m := newHostileSDShare(t)
	var mu sync.Mutex
	entries := []struct{ updated, res, href string }{{"9999-12-31T00:00:00Z", "http://x/a", "/frag/a"}}
	// The fragments feed honours since, as a server does: on main, t at
	// 9999-12-31 hides every later genuine change.
	m.set("/f", func(w http.ResponseWriter, r *http.Request) {
		since, _ := time.Parse(time.RFC3339Nano, r.URL.Query().Get("since"))
		var b strings.Builder
		mu.Lock()
		for _, e := range entries {
			if u, _ := time.Parse(time.RFC3339, e.updated); !u.Before(since) {
				b.WriteString(atomEntry(e.updated, e.res, ns+"fragment", e.href))
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/atom+xml")
		w.Write([]byte(atomFeed(b.String())))
	})
	m.set("/frag/b", ntDoc("<http://x/b> <http://x/p> \"2\" .\n"))
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stateT := func() time.Time {
		t.Helper()
		st, err := client.OpenState(state)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		cs, _, err := st.Get(m.srv.URL + "/c")
		if err != nil {
			t.Fatal(err)
		}
		return cs.T
	}

	code, out, errOut := runCLICtx(ctx, "sdshare", "sync", "--state", state, "--graph", m.srv.URL+"/c=http://x/graph", m.srv.URL+"/")
	if code != 0 || !strings.Contains(errOut, "/frag/a: entry \"urn:/frag/a\" is dated 9999-12-31T00:00:00Z, in the future") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if got, limit := stateT(), time.Now().Add(client.DefaultMaxSkew); got.After(limit) {
		t.Fatalf("t = %v after a fragment dated 9999-12-31 (feed updated 2020-01-01)", got)
	}

	mu.Lock()
	entries = append(entries, struct{ updated, res, href string }{"2020-06-05T00:00:00Z", "http://x/b", "/frag/b"})
	mu.Unlock()
	code, out, errOut = runCLICtx(ctx, "sdshare", "sync", "--state", state, "--graph", m.srv.URL+"/c=http://x/graph", m.srv.URL+"/")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if got := stateT(); !got.Equal(time.Date(2020, 6, 5, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("t = %v after the genuine change of 2020-06-05", got)
	}
	var got []string
	for tr, err := range s.Triples(context.Background(), "http://x/graph") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tr.S.Value+" "+tr.O.Value)
	}
	slices.Sort(got) // the store's order is not the insertion order
	if strings.Join(got, ",") != "http://x/a 1,http://x/b 2" {
		t.Errorf("graph %v, want a=1 (the future-dated fragment, applied) and b=2 (the later genuine change)", got)
	}
}

// Item 5, the snapshot: a snapshot entry dated 9999-12-31 does not set t
// there either, so the fragments after it are still asked for.
func TestSDShareSyncHostileFutureSnapshot(t *testing.T) {
	const ns = "http://www.sdshare.org/2012/core/"
	s := memstore.New()
	defer s.Close()
	useTestStores(t, s)
	m := newHostileSDShare(t)
	m.set("/s", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/atom+xml")
		w.Write([]byte(atomFeed(atomEntry("9999-12-31T00:00:00Z", "", ns+"snapshot", "/snap"))))
	})
	m.set("/f", func(w http.ResponseWriter, r *http.Request) {
		since, _ := time.Parse(time.RFC3339Nano, r.URL.Query().Get("since"))
		e := ""
		if !time.Date(2020, 6, 5, 0, 0, 0, 0, time.UTC).Before(since) {
			e = atomEntry("2020-06-05T00:00:00Z", "http://x/b", ns+"fragment", "/frag/b")
		}
		w.Header().Set("Content-Type", "application/atom+xml")
		w.Write([]byte(atomFeed(e)))
	})
	m.set("/frag/b", ntDoc("<http://x/b> <http://x/p> \"2\" .\n"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code, out, errOut := runCLICtx(ctx, "sdshare", "sync", "--state", t.TempDir(), "--graph", m.srv.URL+"/c=http://x/graph", m.srv.URL+"/")
	if code != 0 || !strings.Contains(errOut, "is dated 9999-12-31T00:00:00Z, in the future") || !strings.Contains(errOut, "t=2020-06-05T00:00:00Z") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	var got []string
	for tr, err := range s.Triples(context.Background(), "http://x/graph") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tr.S.Value+" "+tr.O.Value)
	}
	slices.Sort(got) // the store's order is not the insertion order
	if strings.Join(got, ",") != "http://x/a 0,http://x/b 2" {
		t.Errorf("graph %v, want the snapshot and the fragment after it", got)
	}
}

// atomFeedNext is atomFeed with a next link (href XML-safe).
func atomFeedNext(entries, next string) string {
	if next == "" {
		return atomFeed(entries)
	}
	return strings.Replace(atomFeed(entries), "</feed>", `<link rel="next" href="`+next+`"/></feed>`, 1)
}

func atomDoc(doc string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/atom+xml")
		w.Write([]byte(doc))
	}
}

// hostileGraph returns graph's statements as sorted "subject object".
func hostileGraph(t *testing.T, s interface {
	Triples(context.Context, string) iter.Seq2[rdf.Triple, error]
}, graph string) string {
	t.Helper()
	var got []string
	for tr, err := range s.Triples(context.Background(), graph) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tr.S.Value+" "+tr.O.Value)
	}
	slices.Sort(got) // the store's order is not the insertion order
	return strings.Join(got, ",")
}

// Item 6: a fragment of resource a that carries statements about b (or
// only about b) is refused, naming a and b, and nothing of it is applied,
// as the push receiver refuses it (one rule: sdshare.Split).
func TestSDShareSyncHostileForeignStatements(t *testing.T) {
	for _, tc := range []struct{ name, frag, want string }{
		{"a and b", "<http://x/a> <http://x/p> \"1\" .\n<http://x/b> <http://x/p> \"planted\" .\n",
			"statement with subject http://x/b belongs to none of the resources (http://x/a)"},
		{"only b", "<http://x/b> <http://x/p> \"planted\" .\n",
			"resource http://x/a is not a subject of the document (its statements are about http://x/b)"},
		{"a stray blank node", "<http://x/a> <http://x/p> \"1\" .\n_:x <http://x/p> \"planted\" .\n",
			"statement with subject _:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := memstore.New()
			defer s.Close()
			useTestStores(t, s)
			m := newHostileSDShare(t)
			m.set("/frag/a", ntDoc(tc.frag))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			code, out, errOut := runCLICtx(ctx, "sdshare", "sync", "--state", t.TempDir(), "--graph", m.srv.URL+"/c=http://x/graph", m.srv.URL+"/")
			if code != 1 || !strings.Contains(errOut, "/frag/a of http://x/a refused, nothing applied: "+tc.want) {
				t.Errorf("exit %d, want 1 naming a and the foreign subject\nstdout %s\nstderr %s", code, out, errOut)
			}
			if got := hostileGraph(t, s, "http://x/graph"); got != "http://x/a 0" {
				t.Errorf("graph %v, want the snapshot only (nothing of the refused fragment)", got)
			}
		})
	}
}

// Item 7: fragment links, redirects and next pages to another host or
// port are refused, naming the URL, and never requested; --allow-host
// lets them through.
func TestSDShareSyncHostileOffOrigin(t *testing.T) {
	const ns = "http://www.sdshare.org/2012/core/"
	var mu sync.Mutex
	otherHits := 0
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		otherHits++
		mu.Unlock()
		switch r.URL.Path {
		case "/frag/a":
			ntDoc("<http://x/a> <http://x/p> \"elsewhere\" .\n")(w, r)
		default:
			atomDoc(atomFeed(atomEntry("2020-06-03T00:00:00Z", "http://x/a", ns+"fragment", "/frag/a")))(w, r)
		}
	}))
	defer other.Close()
	otherHost := strings.TrimPrefix(other.URL, "http://")
	for _, tc := range []struct {
		name  string
		setup func(m *hostileSDShare)
		allow bool
		want  string
	}{
		{"fragment link", func(m *hostileSDShare) {
			m.set("/f", atomDoc(atomFeed(atomEntry("2020-06-02T00:00:00Z", "http://x/a", ns+"fragment", other.URL+"/frag/a"))))
		}, false, "location " + other.URL + "/frag/a leaves the Source's authority"},
		{"redirect", func(m *hostileSDShare) {
			m.set("/frag/a", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+"/frag/a", http.StatusFound)
			})
		}, false, "redirect to " + other.URL + "/frag/a leaves the Source's authority"},
		{"next page", func(m *hostileSDShare) {
			m.set("/f", atomDoc(atomFeedNext(atomEntry("2020-06-02T00:00:00Z", "http://x/a", ns+"fragment", "/frag/a"), other.URL+"/f2")))
		}, false, "location " + other.URL + "/f2 leaves the Source's authority"},
		{"fragment link, --allow-host", func(m *hostileSDShare) {
			m.set("/f", atomDoc(atomFeed(atomEntry("2020-06-02T00:00:00Z", "http://x/a", ns+"fragment", other.URL+"/frag/a"))))
		}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := memstore.New()
			defer s.Close()
			useTestStores(t, s)
			m := newHostileSDShare(t)
			tc.setup(m)
			mu.Lock()
			otherHits = 0
			mu.Unlock()
			args := []string{"sdshare", "sync", "--state", t.TempDir(), "--graph", m.srv.URL + "/c=http://x/graph"}
			if tc.allow {
				args = append(args, "--allow-host", otherHost)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			code, out, errOut := runCLICtx(ctx, append(args, m.srv.URL+"/")...)
			mu.Lock()
			hits := otherHits
			mu.Unlock()
			got := hostileGraph(t, s, "http://x/graph")
			if tc.allow {
				if code != 0 || hits == 0 || got != "http://x/a elsewhere" {
					t.Errorf("with --allow-host %s: exit %d, %d requests there, graph %v\nstdout %s\nstderr %s", otherHost, code, hits, got, out, errOut)
				}
				return
			}
			if code != 1 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want 1 with %q\nstdout %s\nstderr %s", code, tc.want, out, errOut)
			}
			if hits != 0 {
				t.Errorf("%d requests to the other host %s", hits, otherHost)
			}
			if want := "http://x/a 0"; got != want && !(tc.name == "next page" && got == "http://x/a 1") {
				t.Errorf("graph %v: something of the other host was planted", got)
			}
		})
	}
}

// Item 2: next links that differ only in their fragment are one page (a
// loop), and a URL longer than 64 KiB is refused, each with its own
// error, within the test's deadline.
func TestSDShareSyncHostileNextLinks(t *testing.T) {
	const ns = "http://www.sdshare.org/2012/core/"
	entry := atomEntry("2020-06-02T00:00:00Z", "http://x/a", ns+"fragment", "/frag/a")
	var served atomic.Int64
	for _, tc := range []struct {
		name string
		f    http.HandlerFunc
		want string
	}{
		{"fragments make no new page", func(w http.ResponseWriter, r *http.Request) {
			// Each page names the next with the same URL and a new
			// fragment: on main an endless chain of "new" pages.
			atomDoc(atomFeedNext(entry, fmt.Sprintf("/f?n=1#p%d", served.Add(1))))(w, r)
		}, "fragments feed: sdshare client: feed page seen before (a loop): http://127.0.0.1:"},
		{"a URL of 100 KiB", func(w http.ResponseWriter, r *http.Request) {
			next := ""
			if r.URL.Query().Get("q") == "" {
				next = "/f?q=" + strings.Repeat("q", 100<<10)
			}
			atomDoc(atomFeedNext(entry, next))(w, r)
		}, "URL too long: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := memstore.New()
			defer s.Close()
			useTestStores(t, s)
			m := newHostileSDShare(t)
			m.set("/f", tc.f)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			code, out, errOut := runCLICtx(ctx, "sdshare", "sync", "--state", t.TempDir(), m.srv.URL+"/")
			if ctx.Err() != nil {
				t.Fatalf("still following pages at the test's deadline\nstderr %.2000s", errOut)
			}
			if code != 1 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want 1 with %q\nstdout %.2000s\nstderr %.2000s", code, tc.want, out, errOut)
			}
			if n := m.count("/f"); n > 2 {
				t.Errorf("%d fragments feed pages read", n)
			}
		})
	}
}
