package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/faultserver"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/graphstoretest"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
)

const testdata = "../../testdata/sdshare"

// fixtureServer serves feeds and RDF on 127.0.0.1 and records every
// request. Feeds are served with their example hosts rewritten to the
// server itself.
type fixtureServer struct {
	t       testing.TB
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []string
	routes  map[string]http.HandlerFunc // by path, or by path?query when registered so
	rewrite []string                    // old, new pairs
}

func newFixtureServer(t testing.TB) *fixtureServer {
	fs := &fixtureServer{t: t, routes: map[string]http.HandlerFunc{}}
	fs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.mu.Lock()
		fs.reqs = append(fs.reqs, r.URL.RequestURI())
		h, ok := fs.routes[r.URL.RequestURI()]
		if !ok {
			h, ok = fs.routes[r.URL.Path]
		}
		if !ok { // routes ending in / serve their subtree
			h, ok = fs.routes[r.URL.Path[:strings.LastIndexByte(r.URL.Path, '/')+1]]
		}
		fs.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(fs.srv.Close)
	return fs
}

func (fs *fixtureServer) URL() string { return fs.srv.URL }

func (fs *fixtureServer) requests() []string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]string(nil), fs.reqs...)
}

func (fs *fixtureServer) handle(path string, h http.HandlerFunc) {
	fs.mu.Lock()
	fs.routes[path] = h
	fs.mu.Unlock()
}

// feedFile serves a fixture feed, hosts rewritten.
func (fs *fixtureServer) feedFile(path, file string) {
	b, err := os.ReadFile(filepath.Join(testdata, file))
	if err != nil {
		fs.t.Fatal(err)
	}
	fs.feed(path, string(b))
}

func (fs *fixtureServer) feed(path, doc string) {
	fs.handle(path, func(w http.ResponseWriter, r *http.Request) {
		s := doc
		for i := 0; i+1 < len(fs.rewrite); i += 2 {
			s = strings.ReplaceAll(s, fs.rewrite[i], fs.rewrite[i+1])
		}
		w.Header().Set("Content-Type", "application/atom+xml")
		w.Write([]byte(s))
	})
}

// ntFile serves an N-Triples file whatever the link's type said (content
// negotiation: the client accepts N-Triples too).
func (fs *fixtureServer) ntFile(path, file string) {
	b, err := os.ReadFile(filepath.Join(testdata, file))
	if err != nil {
		fs.t.Fatal(err)
	}
	fs.nt(path, string(b))
}

func (fs *fixtureServer) nt(path, doc string) {
	fs.handle(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/n-triples")
		w.Write([]byte(doc))
	})
}

type env struct {
	store graphstore.Store
	state *State
	dir   string
	hc    *http.Client
}

func newEnv(t *testing.T) *env {
	dir := t.TempDir()
	st, err := OpenState(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	hc, _ := testnet.Client(t)
	s := memstore.New()
	t.Cleanup(func() { s.Close() })
	return &env{store: s, state: st, dir: dir, hc: hc}
}

func (e *env) config(overview string) Config {
	return Config{
		Overview:   overview,
		Store:      e.store,
		State:      e.state,
		HTTPClient: e.hc,
		Retry:      RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, MaxRetryAfter: 20 * time.Millisecond},
		MaxWait:    2 * time.Second,
	}
}

func readNT(t *testing.T, file string) []rdf.Triple {
	t.Helper()
	f, err := os.Open(filepath.Join(testdata, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []rdf.Triple
	for tr, err := range rdf.Parse(f, rdf.NTriples, "") {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tr)
	}
	return out
}

func graphOf(t *testing.T, s graphstore.Store, g string) []rdf.Triple {
	t.Helper()
	var out []rdf.Triple
	for tr, err := range s.Triples(context.Background(), g) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tr)
	}
	return out
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v.UTC()
}

func sinceOf(t *testing.T, reqs []string, path string) []string {
	var out []string
	for _, r := range reqs {
		if strings.HasPrefix(r, path+"?since=") || r == path {
			out = append(out, r)
		}
	}
	return out
}

// specServer serves the spec's example feeds (SD-CLI-2..12).
func specServer(t *testing.T) *fixtureServer {
	fs := newFixtureServer(t)
	fs.rewrite = []string{"http://example.org/collections", fs.URL() + "/collections"}
	const c = "/collections/collection-one"
	fs.feedFile("/collections", "spec-examples/overview.atom")
	fs.feedFile(c, "spec-examples/collection.atom")
	fs.feedFile(c+"/snapshots", "spec-examples/snapshots.atom")
	fs.feedFile(c+"/snapshots/0001/chunks", "spec-examples/chunked-snapshot.atom")
	fs.ntFile(c+"/snapshots/0001/part-1", "client/spec-part-1.nt")
	fs.feedFile(c+"/fragments", "spec-examples/fragments-since.atom")
	fs.ntFile(c+"/fragments?id=2321", "client/spec-fragment-2321.nt")
	return fs
}

func TestSyncSpecExamples(t *testing.T) {
	fs := specServer(t)
	e := newEnv(t)
	cfg := e.config(fs.URL() + "/collections")
	ctx := context.Background()
	rep, err := Sync(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Collections) != 1 {
		t.Fatalf("report %+v", rep)
	}
	cr := rep.Collections[0]
	graph := fs.URL() + "/collections/collection-one"
	if cr.Graph != graph || !cr.SnapshotLoaded || cr.SnapshotTriples != 9 || cr.Applied != 1 {
		t.Errorf("collection report %+v", cr)
	}
	// SD-CLI-6 then 9: t from the snapshot, then from the fragment.
	if want := mustTime(t, "2008-07-17T15:55:21.971145Z"); !cr.T.Equal(want) {
		t.Errorf("t = %v, want %v", cr.T, want)
	}
	// SD-CLI-4: the chunk was loaded, not the unchunked snapshot.
	reqs := fs.requests()
	if s := sinceOf(t, reqs, "/collections/collection-one/snapshots/0001"); len(s) != 0 {
		t.Errorf("unchunked snapshot fetched: %v", s)
	}
	// SD-CLI-10: since is the snapshot's updated, all digits kept.
	if s := sinceOf(t, reqs, "/collections/collection-one/fragments"); len(s) != 1 || s[0] != "/collections/collection-one/fragments?since=2008-07-17T14%3A04%3A42.205299Z" {
		t.Errorf("fragments requests %v", s)
	}
	if got, want := graphOf(t, e.store, graph), readNT(t, "client/spec-expected.nt"); !rdf.Isomorphic(got, want) {
		t.Errorf("graph after sync:\n%v\nwant\n%v", got, want)
	}
	st, ok, err := e.state.Get(graph)
	if err != nil || !ok || !st.T.Equal(cr.T) || !st.Snapshot.Equal(mustTime(t, "2008-07-17T14:04:42.205299Z")) {
		t.Errorf("state %+v %v %v", st, ok, err)
	}

	// A second run asks since t (inclusive: the same entry comes again and
	// is applied again, SD-CLI-11) and leaves the graph as it was.
	rep, err = Sync(ctx, cfg)
	if err != nil || !rep.OK() {
		t.Fatalf("second run: %v %+v", err, rep)
	}
	cr2 := rep.Collections[0]
	if cr2.SnapshotLoaded || cr2.Applied != 1 || !cr2.T.Equal(cr.T) {
		t.Errorf("second run %+v", cr2)
	}
	if s := sinceOf(t, fs.requests(), "/collections/collection-one/fragments"); len(s) != 2 || s[1] != "/collections/collection-one/fragments?since=2008-07-17T15%3A55%3A21.971145Z" {
		t.Errorf("second fragments request %v", s)
	}
	if got, want := graphOf(t, e.store, graph), readNT(t, "client/spec-expected.nt"); !rdf.Isomorphic(got, want) {
		t.Errorf("graph after the second run differs")
	}
}

// The Ontopia feeds: legacy namespace, rel alternate only, relative
// hrefs, two pages.
func TestSyncOntopiaPaged(t *testing.T) {
	fs := newFixtureServer(t)
	fs.rewrite = []string{"http://localhost:8080/duke-sdshare/duke/", fs.URL() + "/ontopia/"}
	fs.feedFile("/ontopia/overview.xml", "client/ontopia-overview.xml")
	fs.feedFile("/ontopia/collection-paged.xml", "ontopia-client-feeds/collection-paged.xml")
	fs.feedFile("/ontopia/snapshots", "ontopia-client-feeds/snapshot-1.xml")
	fs.ntFile("/ontopia/some-snapshot.rdf", "client/ontopia-snapshot.nt")
	fs.feedFile("/ontopia/fragment-paged.xml", "ontopia-client-feeds/fragment-paged.xml")
	fs.feedFile("/ontopia/fragment-paged-2.xml", "ontopia-client-feeds/fragment-paged-2.xml")
	fs.ntFile("/ontopia/fragment.jsp?topicmap=beer.xtm&topic=4518&syntax=rdf", "client/ontopia-topic-4518.nt")
	fs.ntFile("/ontopia/fragment.jsp?topicmap=beer.xtm&topic=4519&syntax=rdf", "client/ontopia-topic-4519.nt")
	e := newEnv(t)
	rep, err := Sync(context.Background(), e.config(fs.URL()+"/ontopia/overview.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("report %+v", rep)
	}
	cr := rep.Collections[0]
	if !cr.SnapshotLoaded || cr.Pages != 2 || cr.Applied != 2 {
		t.Errorf("report %+v", cr)
	}
	// The snapshot (12:37:42.065) is newer than both fragments (19:21:41,
	// 19:21:44 on 2011-01-12)... no: the fragments are from January, so t
	// stays the snapshot's.
	if want := mustTime(t, "2011-09-21T12:37:42.065Z"); !cr.T.Equal(want) {
		t.Errorf("t = %v, want %v", cr.T, want)
	}
	if s := sinceOf(t, fs.requests(), "/ontopia/fragment-paged.xml"); len(s) != 1 || s[0] != "/ontopia/fragment-paged.xml?since=2011-09-21T12%3A37%3A42.065Z" {
		t.Errorf("fragments requests %v", s)
	}
	for _, r := range fs.requests() {
		if strings.Contains(r, "syntax=xtm") {
			t.Errorf("XTM link fetched: %s", r)
		}
	}
	if got, want := graphOf(t, e.store, cr.Graph), readNT(t, "client/ontopia-expected.nt"); !rdf.Isomorphic(got, want) {
		t.Errorf("graph:\n%v\nwant\n%v", got, want)
	}
}

// feeds built by the tests
func feedDoc(next string, entries ...string) string {
	var b strings.Builder
	b.WriteString(`<feed xmlns="http://www.w3.org/2005/Atom" xmlns:sdshare="http://www.sdshare.org/2012/core/"><id>urn:f</id><title>f</title><updated>2020-01-01T00:00:00Z</updated><author><name>t</name></author>`)
	if next != "" {
		fmt.Fprintf(&b, `<link rel="next" href="%s"/>`, next)
	}
	for _, e := range entries {
		b.WriteString(e)
	}
	b.WriteString(`</feed>`)
	return b.String()
}

func entryDoc(id, updated string, resources []string, links ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<entry><id>urn:%s</id><title>%s</title>`, id, id)
	if updated != "" {
		fmt.Fprintf(&b, `<updated>%s</updated>`, updated)
	}
	for _, r := range resources {
		fmt.Fprintf(&b, `<sdshare:resource>%s</sdshare:resource>`, r)
	}
	for i := 0; i+2 < len(links)+1; i += 3 {
		fmt.Fprintf(&b, `<link rel="%s" type="%s" href="%s"/>`, links[i], links[i+1], links[i+2])
	}
	b.WriteString(`</entry>`)
	return b.String()
}

const (
	relFragment = "http://www.sdshare.org/2012/core/fragment"
	nt          = "application/n-triples"
)

// collectionServer serves an overview, a collection feed and a snapshots
// feed with one N-Triples snapshot taken at snapAt; the test adds the
// fragments feed at /fragments.
func collectionServer(t testing.TB, snapAt, snapshot string) *fixtureServer {
	fs := newFixtureServer(t)
	u := fs.URL()
	fs.feed("/", feedDoc("", entryDoc("c", "2020-01-01T00:00:00Z", nil,
		"http://www.sdshare.org/2012/core/collectionfeed", "application/atom+xml", u+"/c")))
	fs.feed("/c", feedDoc("",
		entryDoc("s", "2020-01-01T00:00:00Z", nil, "http://www.sdshare.org/2012/core/snapshotsfeed", "application/atom+xml", "/snapshots"),
		entryDoc("f", "2020-01-01T00:00:00Z", nil, "http://www.sdshare.org/2012/core/fragmentsfeed", "application/atom+xml", "/fragments")))
	fs.feed("/snapshots", feedDoc("",
		entryDoc("old", "2019-01-01T00:00:00Z", nil, "http://www.sdshare.org/2012/core/snapshot", nt, "/snap-old"),
		entryDoc("new", snapAt, nil, "http://www.sdshare.org/2012/core/snapshot", nt, "/snap"),
	))
	fs.nt("/snap", snapshot)
	return fs
}

func TestSnapshot202(t *testing.T) {
	for _, tc := range []struct {
		name    string
		accepts int // 202s before the 200
		ok      bool
	}{
		{"ready after three 202s", 3, true},
		{"never ready", 1 << 30, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := collectionServer(t, "2020-06-01T00:00:00Z", "")
			var mu sync.Mutex
			n := 0
			fs.handle("/snap", func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				n++
				busy := n <= tc.accepts
				mu.Unlock()
				if busy {
					w.Header().Set("Retry-After", "1") // capped to 20ms by the policy
					w.WriteHeader(http.StatusAccepted)
					return
				}
				w.Header().Set("Content-Type", nt)
				w.Write([]byte("<http://x/a> <http://x/p> \"1\" .\n"))
			})
			fs.feed("/fragments", feedDoc(""))
			e := newEnv(t)
			cfg := e.config(fs.URL() + "/")
			cfg.MaxWait = 200 * time.Millisecond
			rep, err := Sync(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			cr := rep.Collections[0]
			if rep.OK() != tc.ok {
				t.Fatalf("OK = %v, report %+v", rep.OK(), cr)
			}
			if tc.ok {
				if n != tc.accepts+1 || !cr.T.Equal(mustTime(t, "2020-06-01T00:00:00Z")) || cr.SnapshotTriples != 1 {
					t.Errorf("requests %d, report %+v", n, cr)
				}
				return
			}
			if !strings.Contains(cr.Err, "202") || !cr.T.IsZero() {
				t.Errorf("report %+v", cr)
			}
			if s := sinceOf(t, fs.requests(), "/fragments"); len(s) != 0 {
				t.Errorf("fragments read without a snapshot: %v", s)
			}
			if st, _, _ := e.state.Get(fs.URL() + "/c"); !st.T.IsZero() {
				t.Errorf("t set after a failed snapshot: %v", st.T)
			}
		})
	}
}

func TestMalformedEntries(t *testing.T) {
	good := func(id, upd, r string) string {
		return entryDoc(id, upd, []string{r}, relFragment, nt, "/frag/"+id)
	}
	for _, tc := range []struct {
		name     string
		entries  []string
		failures int
		t        string // t after the run
	}{
		{"all good", []string{good("a", "2020-06-02T00:00:00Z", "http://x/a"), good("b", "2020-06-03T00:00:00Z", "http://x/b")}, 0, "2020-06-03T00:00:00Z"},
		{"two resources", []string{
			good("a", "2020-06-02T00:00:00Z", "http://x/a"),
			entryDoc("two", "2020-06-02T12:00:00Z", []string{"http://x/a", "http://x/b"}, relFragment, nt, "/frag/a"),
			good("b", "2020-06-03T00:00:00Z", "http://x/b")}, 1, "2020-06-02T12:00:00Z"},
		{"no fragment link", []string{
			good("a", "2020-06-02T00:00:00Z", "http://x/a"),
			entryDoc("nolink", "2020-06-02T06:00:00Z", []string{"http://x/a"}),
			good("b", "2020-06-03T00:00:00Z", "http://x/b")}, 1, "2020-06-02T06:00:00Z"},
		{"no updated", []string{
			good("a", "2020-06-02T00:00:00Z", "http://x/a"),
			entryDoc("noupd", "", []string{"http://x/a"}, relFragment, nt, "/frag/a"),
			good("b", "2020-06-03T00:00:00Z", "http://x/b")}, 1, "2020-06-01T00:00:00Z"},
		{"fragment 404", []string{
			good("a", "2020-06-02T00:00:00Z", "http://x/a"),
			good("gone", "2020-06-02T01:00:00Z", "http://x/c"),
			good("b", "2020-06-03T00:00:00Z", "http://x/b")}, 1, "2020-06-02T01:00:00Z"},
		{"broken N-Triples", []string{
			good("a", "2020-06-02T00:00:00Z", "http://x/a"),
			good("bad", "2020-06-02T02:00:00Z", "http://x/c"),
			good("b", "2020-06-03T00:00:00Z", "http://x/b")}, 1, "2020-06-02T02:00:00Z"},
		{"fragment about another resource", []string{
			good("a", "2020-06-02T00:00:00Z", "http://x/a"),
			good("other", "2020-06-02T03:00:00Z", "http://x/c"),
			good("b", "2020-06-03T00:00:00Z", "http://x/b")}, 1, "2020-06-02T03:00:00Z"},
	} {
		// memstore: one ApplyFragment each; boltstore: one batch.
		for _, kind := range []string{"memstore", "boltstore"} {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				fs := collectionServer(t, "2020-06-01T00:00:00Z", "<http://x/a> <http://x/p> \"0\" .\n")
				fs.nt("/frag/a", "<http://x/a> <http://x/p> \"1\" .\n")
				fs.nt("/frag/b", "<http://x/b> <http://x/p> \"2\" .\n")
				fs.nt("/frag/bad", "<http://x/c> <http://x/p> \"unterminated .\n")
				fs.nt("/frag/other", "<http://x/c> <http://x/p> \"3\" .\n<http://x/z> <http://x/p> \"9\" .\n")
				fs.feed("/fragments", feedDoc("", tc.entries...))
				e := newEnv(t)
				if kind == "boltstore" {
					bs, err := boltstore.OpenDir(e.dir, nil)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { bs.Close() })
					e.store = bs
				}
				rep, err := Sync(context.Background(), e.config(fs.URL()+"/"))
				if err != nil {
					t.Fatal(err)
				}
				cr := rep.Collections[0]
				if len(cr.Failures) != tc.failures || rep.OK() != (tc.failures == 0) {
					t.Errorf("failures %+v", cr.Failures)
				}
				if !cr.T.Equal(mustTime(t, tc.t)) {
					t.Errorf("t = %v, want %s", cr.T, tc.t)
				}
				if st, _, _ := e.state.Get(fs.URL() + "/c"); !st.T.Equal(cr.T) {
					t.Errorf("state t %v", st.T)
				}
				// The good entries are applied all the same.
				want := graphstoretest.NT("<http://x/a> <http://x/p> \"1\" .\n<http://x/b> <http://x/p> \"2\" .\n")
				if got := graphOf(t, e.store, fs.URL()+"/c"); !rdf.Isomorphic(got, want) {
					t.Errorf("graph %v", got)
				}
			})
		}
	}
}

func TestPaging(t *testing.T) {
	frag := func(id, upd string) string {
		return entryDoc(id, upd, []string{"http://x/" + id}, relFragment, nt, "/frag/"+id)
	}
	t.Run("pages applied in order, t per page", func(t *testing.T) {
		fs := collectionServer(t, "2020-06-01T00:00:00Z", "")
		for _, id := range []string{"a", "b", "c", "d"} {
			fs.nt("/frag/"+id, fmt.Sprintf("<http://x/%s> <http://x/p> \"%s\" .\n", id, id))
		}
		// Entries within a page in any order; equal timestamps across the
		// page boundary.
		fs.feed("/fragments", feedDoc("/fragments?page=2", frag("b", "2020-06-03T00:00:00Z"), frag("a", "2020-06-02T00:00:00Z")))
		fs.feed("/fragments?page=2", feedDoc("/fragments?page=3", frag("c", "2020-06-03T00:00:00Z")))
		fs.feed("/fragments?page=3", feedDoc("", frag("d", "2020-06-04T00:00:00.5Z")))
		var pageT []time.Time
		e := newEnv(t)
		cfg := e.config(fs.URL() + "/")
		cfg.Events = func(ev Event) {
			if ev.Kind == "page" {
				st, _, _ := e.state.Get(fs.URL() + "/c")
				if !st.T.Equal(ev.T) {
					t.Errorf("page event t %v, state %v", ev.T, st.T)
				}
				pageT = append(pageT, ev.T)
			}
		}
		rep, err := Sync(context.Background(), cfg)
		if err != nil || !rep.OK() {
			t.Fatalf("%v %+v", err, rep)
		}
		want := []string{"2020-06-03T00:00:00Z", "2020-06-03T00:00:00Z", "2020-06-04T00:00:00.5Z"}
		if len(pageT) != 3 {
			t.Fatalf("pages %v", pageT)
		}
		for i, w := range want {
			if !pageT[i].Equal(mustTime(t, w)) {
				t.Errorf("t after page %d = %v, want %s", i+1, pageT[i], w)
			}
		}
		if got := graphOf(t, e.store, fs.URL()+"/c"); len(got) != 4 {
			t.Errorf("graph %v", got)
		}
		if rep.Collections[0].OutOfOrder != 0 {
			t.Errorf("out of order %d", rep.Collections[0].OutOfOrder)
		}
	})
	t.Run("loop", func(t *testing.T) {
		fs := collectionServer(t, "2020-06-01T00:00:00Z", "")
		fs.nt("/frag/a", "<http://x/a> <http://x/p> \"a\" .\n")
		fs.feed("/fragments", feedDoc("/fragments?page=2", frag("a", "2020-06-02T00:00:00Z")))
		fs.feed("/fragments?page=2", feedDoc("/fragments?since=2020-06-01T00%3A00%3A00Z"))
		e := newEnv(t)
		rep, err := Sync(context.Background(), e.config(fs.URL()+"/"))
		if err != nil {
			t.Fatal(err)
		}
		cr := rep.Collections[0]
		if rep.OK() || !strings.Contains(cr.Err, "loop") || cr.Pages != 2 {
			t.Errorf("report %+v", cr)
		}
		// The pages before the loop were applied and recorded.
		if !cr.T.Equal(mustTime(t, "2020-06-02T00:00:00Z")) {
			t.Errorf("t %v", cr.T)
		}
	})
}

func TestDiscoveryErrors(t *testing.T) {
	fs := newFixtureServer(t)
	fs.feed("/empty", feedDoc(""))
	fs.nt("/notatom", "<http://x/a> <http://x/p> \"a\" .\n")
	fs.feed("/nofrag", feedDoc("", entryDoc("c", "2020-01-01T00:00:00Z", nil, "http://www.sdshare.org/2012/core/collectionfeed", "application/atom+xml", "/c")))
	fs.feed("/c", feedDoc(""))
	for _, tc := range []struct {
		path    string
		wantErr bool // Sync's error (exit 2); else a collection failure
	}{
		{"/missing", true},
		{"/empty", true},
		{"/notatom", true},
		{"/nofrag", false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			e := newEnv(t)
			rep, err := Sync(context.Background(), e.config(fs.URL()+tc.path))
			if tc.wantErr {
				if !errors.Is(err, ErrDiscovery) {
					t.Errorf("err = %v", err)
				}
				return
			}
			if err != nil || rep.OK() || !strings.Contains(rep.Collections[0].Err, "fragments feed") {
				t.Errorf("err %v report %+v", err, rep)
			}
		})
	}
}

func TestSinceURL(t *testing.T) {
	ts := mustTime(t, "2011-03-24T10:04:02Z")
	for _, tc := range []struct {
		base string
		t    time.Time
		want string
	}{
		{"http://www.example.org/sdshare/fragments", ts, "http://www.example.org/sdshare/fragments?since=2011-03-24T10%3A04%3A02Z"},
		{"http://www.example.org/sdshare/fragments?tm=x.xtm", ts, "http://www.example.org/sdshare/fragments?tm=x.xtm&since=2011-03-24T10%3A04%3A02Z"},
		{"http://www.example.org/sdshare/fragments", time.Time{}, "http://www.example.org/sdshare/fragments"},
		{"http://e.org/f?", mustTime(t, "2002-05-22T22:13:21.380123456Z"), "http://e.org/f?since=2002-05-22T22%3A13%3A21.380123456Z"},
		{"http://e.org/f#x", ts, "http://e.org/f?since=2011-03-24T10%3A04%3A02Z#x"},
	} {
		if got := SinceURL(tc.base, tc.t); got != tc.want {
			t.Errorf("SinceURL(%q, %v) = %q, want %q", tc.base, tc.t, got, tc.want)
		}
	}
	// An instant in another zone is sent in UTC, so no '+' needs escaping;
	// and the value parses back to the same instant.
	loc := time.FixedZone("x", 3600)
	got := SinceURL("http://e.org/f", ts.In(loc))
	if got != "http://e.org/f?since=2011-03-24T10%3A04%3A02Z" {
		t.Errorf("zoned: %q", got)
	}
}

func TestStateSurvivesReopen(t *testing.T) {
	fs := specServer(t)
	e := newEnv(t)
	if _, err := Sync(context.Background(), e.config(fs.URL()+"/collections")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenState(e.dir); !errors.Is(err, ErrStateLocked) {
		t.Errorf("second open: %v, want ErrStateLocked", err)
	}
	e.state.Close()
	st, err := OpenState(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	all, err := st.All()
	if err != nil || len(all) != 1 {
		t.Fatalf("%v %v", all, err)
	}
	for k, cs := range all {
		if k != fs.URL()+"/collections/collection-one" || !cs.T.Equal(mustTime(t, "2008-07-17T15:55:21.971145Z")) || cs.Synced.IsZero() {
			t.Errorf("%s: %+v", k, cs)
		}
	}
}

// Chunks are separate documents: _:b of two chunks are two nodes.
func TestChunkBlankNodesApart(t *testing.T) {
	fs := collectionServer(t, "2020-06-01T00:00:00Z", "")
	fs.feed("/snapshots", feedDoc("",
		entryDoc("new", "2020-06-01T00:00:00Z", nil, "http://www.sdshare.org/2012/core/chunked-snapshot", "application/atom+xml", "/chunks")))
	fs.feed("/chunks", feedDoc("/chunks?page=2",
		entryDoc("c1", "2020-06-01T00:00:00Z", nil, "http://www.sdshare.org/2012/core/snapshot-component", nt, "/chunk/1")))
	fs.feed("/chunks?page=2", feedDoc("",
		entryDoc("c2", "2020-06-01T00:00:00Z", nil, "http://www.sdshare.org/2012/core/snapshot-component", nt, "/chunk/2")))
	fs.nt("/chunk/1", "<http://x/a> <http://x/p> _:b .\n_:b <http://x/q> \"1\" .\n")
	fs.nt("/chunk/2", "<http://x/c> <http://x/p> _:b .\n_:b <http://x/q> \"2\" .\n")
	fs.feed("/fragments", feedDoc(""))
	e := newEnv(t)
	rep, err := Sync(context.Background(), e.config(fs.URL()+"/"))
	if err != nil || !rep.OK() {
		t.Fatalf("%v %+v", err, rep)
	}
	want := graphstoretest.NT("<http://x/a> <http://x/p> _:b1 .\n_:b1 <http://x/q> \"1\" .\n<http://x/c> <http://x/p> _:b2 .\n_:b2 <http://x/q> \"2\" .\n")
	if got := graphOf(t, e.store, fs.URL()+"/c"); !rdf.Isomorphic(got, want) {
		t.Errorf("graph %v", got)
	}
}

// Through a server that fails a third of its responses (500, 429, resets,
// truncated bodies), the client retries and ends with the exact graph.
func TestSyncThroughFaults(t *testing.T) {
	fs := specServer(t)
	fh := faultserver.New(fs.srv.Config.Handler, 0.35, 7)
	fh.Faults = []faultserver.Fault{faultserver.Status500, faultserver.Status429, faultserver.Reset, faultserver.Truncated}
	fs.srv.Config.Handler = fh
	e := newEnv(t)
	cfg := e.config(fs.URL() + "/collections")
	cfg.Retry.Retries = 6
	rep, err := Sync(context.Background(), cfg)
	if err != nil || !rep.OK() {
		t.Fatalf("%v %+v", err, rep)
	}
	if fh.Injected() == 0 {
		t.Fatal("no fault injected")
	}
	graph := fs.URL() + "/collections/collection-one"
	if got, want := graphOf(t, e.store, graph), readNT(t, "client/spec-expected.nt"); !rdf.Isomorphic(got, want) {
		t.Errorf("graph %v", got)
	}
	t.Logf("faults %v", fh.Counts())
}

// Follow polls: a change published between two polls arrives.
func TestFollow(t *testing.T) {
	fs := collectionServer(t, "2020-06-01T00:00:00Z", "<http://x/a> <http://x/p> \"0\" .\n")
	fs.feed("/fragments", feedDoc(""))
	fs.nt("/frag/a", "<http://x/a> <http://x/p> \"1\" .\n")
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := 0
	var errs []error
	err := Follow(ctx, e.config(fs.URL()+"/"), time.Millisecond, func(rep *Report, err error) {
		runs++
		if err != nil || !rep.OK() {
			errs = append(errs, fmt.Errorf("run %d: %v %+v", runs, err, rep))
		}
		switch runs {
		case 1:
			fs.feed("/fragments", feedDoc("", entryDoc("a", "2020-06-02T00:00:00Z", []string{"http://x/a"}, relFragment, nt, "/frag/a")))
		case 3:
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || len(errs) > 0 {
		t.Fatalf("Follow: %v %v", err, errs)
	}
	if got := graphOf(t, e.store, fs.URL()+"/c"); !rdf.Isomorphic(got, graphstoretest.NT("<http://x/a> <http://x/p> \"1\" .\n")) {
		t.Errorf("graph %v", got)
	}
	if st, _, _ := e.state.Get(fs.URL() + "/c"); !st.T.Equal(mustTime(t, "2020-06-02T00:00:00Z")) {
		t.Errorf("t %v", st.T)
	}
}
