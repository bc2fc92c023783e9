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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare"
	"github.com/resourcesync-go/resourcesync/sdshare/client"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/sparql"
	"github.com/resourcesync-go/resourcesync/sdshare/server"
)

// sdshareServer runs our SDShare server on 127.0.0.1 over the RDF files
// of its collections (name → file) and returns its overview feed's URL.
func sdshareServer(t *testing.T, cols map[string]string) (string, *server.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	var cc []server.CollectionConfig
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range cols {
			if !yield(n) {
				return
			}
		}
	}) {
		cc = append(cc, server.CollectionConfig{Name: name, Path: cols[name]})
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.Open(ctx, server.Config{BaseURL: base, StateDir: t.TempDir(), Collections: cc,
		PageSize: 5, ChunkSize: 1000, Rescan: -1, NoSync: true})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	done := make(chan struct{})
	go func() { srv.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		hs.Close()
		<-done
		srv.Close()
	})
	return base, srv
}

// reload makes the server read the named collection's file again (the
// changes become fragments).
func reload(t *testing.T, srv *server.Server, name string) {
	t.Helper()
	if _, err := srv.Collection(name).Load(context.Background(), true); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// events collects emitted events.
type events struct {
	mu sync.Mutex
	ev []destination.Event
}

func (e *events) emit(ev destination.Event) {
	e.mu.Lock()
	e.ev = append(e.ev, ev)
	e.mu.Unlock()
}

func (e *events) kinds(set string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.ev {
		if ev.Set == set {
			out = append(out, ev.Kind)
		}
	}
	return out
}

// TestSyncSDShare: one run over a server of two collections makes the
// state directory, loads one graph per collection and reports it; a
// second run after a change applies fragments.
func TestSyncSDShare(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.nt"), filepath.Join(dir, "b.nt")
	writeFile(t, a, "<http://ex.test/a1> <http://ex.test/p> _:x .\n_:x <http://ex.test/q> \"1\" .\n")
	writeFile(t, b, "<http://ex.test/b1> <http://ex.test/p> \"b\" .\n<http://ex.test/b2> <http://ex.test/p> \"c\" .\n")
	base, srv := sdshareServer(t, map[string]string{"a": a, "b": b})
	hc, _ := testnet.Client(t)
	store := memstore.New()
	dest := filepath.Join(t.TempDir(), "deep", "dest")
	var ev events
	src := Source{ID: "s", URL: base, Dest: "s", Kind: KindSDShare}
	res := syncSDShare(context.Background(), src, dest, store, hc, ev.emit)
	if res.Err != nil || !res.ok() || res.Mode != ModeSDShare {
		t.Fatalf("first run: %+v", res)
	}
	if want := []string{base + "a/", base + "b/"}; !slices.Equal(res.Graphs, want) {
		t.Errorf("graphs %v, want %v", res.Graphs, want)
	}
	if res.Fetched != 2 { // two snapshots
		t.Errorf("fetched %d, want 2 (the snapshots)", res.Fetched)
	}
	if fi, err := os.Stat(filepath.Join(dest, client.StateFile)); err != nil || fi.Size() == 0 {
		t.Errorf("state file: %v", err)
	}
	if fi, err := os.Stat(dest); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("dest: %v %v", fi.Mode(), err)
	}
	if k := ev.kinds("a"); !slices.Contains(k, destination.EventPlan) || !slices.Contains(k, destination.EventFetched) || k[len(k)-1] != destination.EventDone {
		t.Errorf("events of collection a: %v", k)
	}

	writeFile(t, b, "<http://ex.test/b1> <http://ex.test/p> \"B\" .\n")
	reload(t, srv, "b")
	res = syncSDShare(context.Background(), src, dest, store, hc, ev.emit)
	if res.Err != nil || res.Fetched != 1 || res.Deleted != 1 {
		t.Fatalf("second run: %+v, want 1 fragment applied and 1 deleted", res)
	}

	// Sets limits the run to the collections named.
	src.Sets = []string{"a"}
	res = syncSDShare(context.Background(), src, dest, store, hc, nil)
	if res.Err != nil || !slices.Equal(res.Graphs, []string{base + "a/"}) {
		t.Errorf("run of set a: %+v", res)
	}
}

// feeds is a hand-made SDShare server on 127.0.0.1: path → Atom feed.
func feeds(t *testing.T, docs map[string]string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/atom+xml")
		fmt.Fprint(w, d)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func feed(links, entries string) string {
	return `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom" xmlns:sd="http://www.sdshare.org/2012/extension/">
<title>t</title><id>urn:x:f</id><updated>2020-01-01T00:00:00Z</updated><author><name>a</name></author>` + links + entries + `</feed>`
}

func entry(id, rel, href string) string {
	return `<entry><id>urn:x:` + id + `</id><title>` + id + `</title><updated>2020-01-01T00:00:00Z</updated><link rel="` + rel + `" href="` + href + `"/></entry>`
}

// TestSyncSDShareReasons: each way an SDShare Source fails gets its
// reason, from real servers on loopback.
func TestSyncSDShareReasons(t *testing.T) {
	refused := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		u := "http://" + ln.Addr().String() + "/"
		ln.Close()
		return u
	}
	status := func(code int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }))
		t.Cleanup(srv.Close)
		return srv.URL + "/"
	}
	stop := make(chan struct{})
	stalling := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/atom+xml")
		w.WriteHeader(200)
		fmt.Fprint(w, `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom">`)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop); stalling.Close() })
	other := feeds(t, map[string]string{"/": feed("", "")})
	offOrigin := httptest.NewServer(http.RedirectHandler(other+"/", http.StatusFound))
	t.Cleanup(offOrigin.Close)
	notAtom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>hello</body></html>")
	}))
	t.Cleanup(notAtom.Close)
	loop := feeds(t, map[string]string{
		"/":            feed("", entry("c", sdshare.RelCollectionFeed, "/c/")),
		"/c/":          feed("", entry("f", sdshare.RelFragmentsFeed, "/c/fragments")),
		"/c/fragments": feed(`<link rel="next" href="/c/fragments"/>`, ""),
	})
	hdir := t.TempDir()
	writeFile(t, filepath.Join(hdir, "c.nt"), "<http://ex.test/a> <http://ex.test/p> _:b .\n_:b <http://ex.test/q> \"x\" .\n")
	healthy, _ := sdshareServer(t, map[string]string{"c": filepath.Join(hdir, "c.nt")})
	lockedDest := t.TempDir()
	held, err := client.OpenState(lockedDest)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Close() })

	cases := []struct {
		name, url, dest string
		timeout         time.Duration
		noStore         bool
		store           graphstore.Store
		want            string
	}{
		{name: "refused", url: refused(), want: ReasonUnreachable},
		{name: "401", url: status(401), want: ReasonAuth},
		{name: "403", url: status(403), want: ReasonAuth},
		{name: "404", url: status(404), want: ReasonHTTP},
		{name: "stalled", url: stalling.URL + "/", timeout: 100 * time.Millisecond, want: ReasonStalled},
		{name: "off-origin redirect", url: offOrigin.URL + "/", want: ReasonHostile},
		{name: "not Atom", url: notAtom.URL + "/", want: ReasonHostile},
		{name: "feed loop", url: loop + "/", want: ReasonHostile},
		{name: "no collection", url: other + "/", want: ReasonConfig},
		{name: "state locked", url: other + "/", dest: lockedDest, want: ReasonLocked},
		{name: "no graph store", url: other + "/", noStore: true, want: ReasonConfig},
		// The graph store down is not the Source's fault.
		{name: "graph store down", url: healthy, store: sparql.New(sparql.Endpoints{Update: refused(), Query: refused()}, nil), want: ReasonState},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hc, _ := testnet.Client(t)
			dest := tc.dest
			if dest == "" {
				dest = t.TempDir()
			}
			var store graphstore.Store = memstore.New()
			switch {
			case tc.noStore:
				store = nil
			case tc.store != nil:
				store = tc.store
			}
			var ev events
			src := Source{ID: tc.name, URL: tc.url, Kind: KindSDShare, Timeout: tc.timeout}
			res := syncSDShare(context.Background(), src, dest, store, hc, ev.emit)
			if res.Err == nil || res.ok() || res.Reason != tc.want {
				t.Errorf("reason %q, want %q (err %v)", res.Reason, tc.want, res.Err)
			}
			if tc.name == "feed loop" && (res.Failed != 1 || !strings.Contains(res.Err.Error(), "loop") || !slices.Contains(ev.kinds("c"), destination.EventFailed)) {
				t.Errorf("feed loop: failed %d, err %v, events %v", res.Failed, res.Err, ev.kinds("c"))
			}
		})
	}
}

// TestSyncSDShareFenced: an SDShare run whose fence refuses (its lease
// ended under it) writes no graph: neither the snapshot nor, once a
// first run loaded it, a fragment; the run fails with the fence's error.
func TestSyncSDShareFenced(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.nt")
	writeFile(t, a, "<http://ex.test/a1> <http://ex.test/p> \"1\" .\n")
	base, srv := sdshareServer(t, map[string]string{"a": a})
	hc, _ := testnet.Client(t)
	src := Source{ID: "s", URL: base, Dest: "s", Kind: KindSDShare}
	mem := memstore.New()
	var refuse atomic.Bool
	refused := errors.New("fenced (test)")
	store := fencedStore{mem, func(context.Context) error {
		if refuse.Load() {
			return refused
		}
		return nil
	}}
	ctx := context.Background()
	refuse.Store(true)
	res := syncSDShare(ctx, src, filepath.Join(t.TempDir(), "fresh"), store, hc, nil)
	if gs, _ := mem.Graphs(ctx); res.Err == nil || !errors.Is(res.Err, refused) || len(gs) != 0 {
		t.Fatalf("fenced first run: %+v, graphs %v", res, gs)
	}
	dest := filepath.Join(t.TempDir(), "dest")
	refuse.Store(false)
	if res := syncSDShare(ctx, src, dest, store, hc, nil); res.Err != nil {
		t.Fatalf("run: %+v", res)
	}
	writeFile(t, a, "<http://ex.test/a1> <http://ex.test/p> \"2\" .\n")
	reload(t, srv, "a")
	refuse.Store(true)
	res = syncSDShare(ctx, src, dest, store, hc, nil)
	ts, err := mem.Fragment(ctx, base+"a/", rdf.IRI("http://ex.test/a1"))
	if err != nil || len(ts) != 1 || ts[0].O.Value != "1" {
		t.Fatalf("the fenced run changed the graph: %v %v", ts, err)
	}
	if res.Err == nil || !errors.Is(res.Err, refused) {
		t.Errorf("fenced run: %+v", res)
	}
}
