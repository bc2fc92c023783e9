package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/sparqltest"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/graphstoretest"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/sparql"
	"github.com/resourcesync-go/resourcesync/sdshare/server"
)

// model is the collection the real server publishes: one fragment per
// resource, written to one N-Triples file.
type model struct {
	rng  *rand.Rand
	docs map[int]string
	next int
	path string
}

func newModel(t *testing.T, seed uint64, n int) *model {
	m := &model{rng: rand.New(rand.NewPCG(seed, 9)), docs: map[int]string{}, path: filepath.Join(t.TempDir(), "data.nt")}
	for range n {
		m.add(1)
	}
	return m
}

// doc returns a fragment for resource i: plain values, links to other
// resources, and depth levels of blank nodes (with a cycle at the bottom).
func (m *model) doc(i, depth int) string {
	r := fmt.Sprintf("<http://e2e.test/r%d>", i)
	var b strings.Builder
	fmt.Fprintf(&b, "%s <http://e2e.test/label> \"r%d v%d\"@en .\n", r, i, m.rng.IntN(1000))
	if m.rng.IntN(2) == 0 {
		fmt.Fprintf(&b, "%s <http://e2e.test/link> <http://e2e.test/r%d> .\n", r, m.rng.IntN(m.next+1))
	}
	prev := r
	for d := range depth {
		bn := fmt.Sprintf("_:r%dd%d", i, d)
		fmt.Fprintf(&b, "%s <http://e2e.test/child> %s .\n%s <http://e2e.test/n> \"%d\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n", prev, bn, bn, m.rng.IntN(100))
		prev = bn
	}
	if depth > 1 {
		fmt.Fprintf(&b, "%s <http://e2e.test/up> _:r%dd0 .\n", prev, i) // a blank-node cycle
	}
	return b.String()
}

func (m *model) add(depth int) {
	m.docs[m.next] = m.doc(m.next, depth)
	m.next++
}

func (m *model) some(k int) []int {
	keys := make([]int, 0, len(m.docs))
	for i := range m.docs {
		keys = append(keys, i)
	}
	slices.Sort(keys)
	m.rng.Shuffle(len(keys), func(a, b int) { keys[a], keys[b] = keys[b], keys[a] })
	return keys[:min(k, len(keys))]
}

func (m *model) write(t *testing.T) {
	var b strings.Builder
	for _, i := range slices.Sorted(func(yield func(int) bool) {
		for i := range m.docs {
			if !yield(i) {
				return
			}
		}
	}) {
		b.WriteString(m.docs[i])
	}
	tmp := m.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, m.path); err != nil {
		t.Fatal(err)
	}
}

func (m *model) triples(t *testing.T) []rdf.Triple {
	var out []rdf.Triple
	for _, d := range m.docs {
		out = append(out, graphstoretest.NT(d)...)
	}
	return out
}

// realServer runs our SDShare server on 127.0.0.1 over m's file.
type realServer struct {
	srv       *server.Server
	base      string
	fragments atomic.Int64 // fragment data requests answered
	chunks    atomic.Int64 // snapshot chunk requests answered
}

func startRealServer(t *testing.T, m *model, pageSize, chunkSize int) *realServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.Open(ctx, server.Config{
		BaseURL: base, StateDir: t.TempDir(),
		Collections: []server.CollectionConfig{{Name: "c", Path: m.path}},
		PageSize:    pageSize, ChunkSize: chunkSize, Rescan: -1, NoSync: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	rs := &realServer{srv: srv, base: base}
	h := srv.Handler()
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/fragment") {
			rs.fragments.Add(1)
		}
		if strings.Contains(r.URL.Path, "/chunk/") {
			rs.chunks.Add(1)
		}
	})}
	go hs.Serve(ln)
	done := make(chan struct{})
	go func() { srv.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		hs.Close()
		<-done
		srv.Close()
	})
	return rs
}

func (rs *realServer) reload(t *testing.T) {
	if _, err := rs.srv.Collection("c").Load(context.Background(), true); err != nil {
		t.Fatal(err)
	}
}

type storeKind struct {
	name string
	open func(t *testing.T, dir string) graphstore.Store
}

func storeKinds() []storeKind {
	return []storeKind{
		{"memstore", nil},
		{"boltstore", func(t *testing.T, dir string) graphstore.Store {
			s, err := boltstore.OpenDir(dir, &boltstore.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"sparql", func(t *testing.T, dir string) graphstore.Store {
			srv := sparqltest.Shared(t)
			if _, err := os.Stat(filepath.Join(dir, StateFile)); err != nil {
				srv.Reset(t) // a new test, not a restart
			}
			hc, _ := testnet.Client(t)
			return sparql.New(sparql.Endpoints{Update: srv.UpdateURL, Query: srv.QueryURL, GraphStore: srv.GraphStoreURL}, hc)
		}},
	}
}

// TestEndToEnd keeps a store in step with our server through batches of
// removals, changes, additions and blank-node-heavy resources, with a
// chunked snapshot and small pages, and a restart of the client between
// batches (durable stores).
func TestEndToEnd(t *testing.T) {
	for _, sk := range storeKinds() {
		t.Run(sk.name, func(t *testing.T) {
			m := newModel(t, 11, 90)
			m.write(t)
			rs := startRealServer(t, m, 7, 25)
			hc, _ := testnet.Client(t)
			dir := t.TempDir()
			var store graphstore.Store
			open := func() {
				if sk.open == nil {
					if store == nil {
						store = memstore.New()
					}
					return
				}
				store = sk.open(t, dir)
			}
			open()
			state, err := OpenState(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { state.Close(); store.Close() }()
			graph := rs.base + "c/"
			step := func(name string) {
				t.Helper()
				cfg := Config{Overview: rs.base, Store: store, State: state, HTTPClient: hc,
					Retry: retry0, MaxWait: 30 * time.Second}
				rep, err := Sync(context.Background(), cfg)
				if err != nil || !rep.OK() {
					t.Fatalf("%s: %v %+v", name, err, rep)
				}
				cr := rep.Collections[0]
				got, want := graphOf(t, store, cr.Graph), m.triples(t)
				if !rdf.Isomorphic(got, want) {
					t.Fatalf("%s: store (%d triples) not isomorphic to the server's graph (%d)", name, len(got), len(want))
				}
				if cr.Bulk != cr.Applied {
					// Our server offers the bulk fragment request: no
					// fragment needs a GET of its own.
					t.Errorf("%s: %d of %d fragments in bulk requests", name, cr.Bulk, cr.Applied)
				}
				t.Logf("%s: %d triples, snapshot %v, %d applied on %d pages (%d in bulk), t=%s", name, len(got), cr.SnapshotLoaded, cr.Applied, cr.Pages, cr.Bulk, cr.T.Format(time.RFC3339Nano))
			}
			step("snapshot")
			if n := rs.chunks.Load(); n < 4 { // 90 resources in chunks of 25
				t.Errorf("%d chunks fetched: the chunked snapshot was not used", n)
			}
			if st, _, _ := state.Get(graph); st.Snapshot.IsZero() {
				t.Errorf("no snapshot recorded: %+v", st)
			}
			batches := []struct {
				name string
				do   func()
			}{
				{"removals", func() {
					for _, i := range m.some(12) {
						delete(m.docs, i)
					}
				}},
				{"changes", func() {
					for _, i := range m.some(15) {
						m.docs[i] = m.doc(i, m.rng.IntN(2))
					}
				}},
				{"additions", func() {
					for range 10 {
						m.add(1)
					}
				}},
				{"blank-node-heavy", func() {
					for _, i := range m.some(10) {
						m.docs[i] = m.doc(i, 3+m.rng.IntN(4))
					}
					for range 5 {
						m.add(6)
					}
				}},
				{"mixed", func() {
					ids := m.some(20)
					for _, i := range ids[:5] {
						delete(m.docs, i)
					}
					for _, i := range ids[5:] {
						m.docs[i] = m.doc(i, m.rng.IntN(3))
					}
					m.add(2)
				}},
			}
			for k, b := range batches {
				b.do()
				m.write(t)
				rs.reload(t)
				if k == 2 && sk.open != nil { // restart the client
					state.Close()
					store.Close()
					open()
					if state, err = OpenState(dir); err != nil {
						t.Fatal(err)
					}
				}
				step(b.name)
			}
		})
	}
}

// TestEndToEndKill: a batch of changes on our server, applied by a client
// process killed (SIGKILL) several times mid-apply, then finished.
func TestEndToEndKill(t *testing.T) {
	t.Run("boltstore", func(t *testing.T) { endToEndKill(t, "") })
	t.Run("sparql", func(t *testing.T) {
		srv := sparqltest.Shared(t)
		srv.Reset(t)
		endToEndKill(t, srv.UpdateURL+" "+srv.QueryURL+" "+srv.GraphStoreURL)
	})
}

func endToEndKill(t *testing.T, sparqlEnv string) {
	t.Setenv("SDSHARE_CRASH_SPARQL", sparqlEnv)
	m := newModel(t, 12, 150)
	m.write(t)
	rs := startRealServer(t, m, 10, 1000)
	dir := t.TempDir()
	if err := syncDir(t, dir, rs.base); err != nil {
		t.Fatal(err)
	}
	for _, i := range m.some(120) {
		if m.rng.IntN(5) == 0 {
			delete(m.docs, i)
		} else {
			m.docs[i] = m.doc(i, m.rng.IntN(4))
		}
	}
	for range 30 {
		m.add(2)
	}
	m.write(t)
	rs.reload(t)
	rng := rand.New(rand.NewPCG(6, 6))
	for k := range 4 {
		cmd := startChild(t, dir, rs.base)
		// Kill after 15 to 40 more fragments were served: past the first
		// page of 10, in the middle of another.
		served, target := rs.fragments.Load(), int64(15+rng.IntN(26))
		err := killWhen(cmd, func() bool { return rs.fragments.Load() >= served+target })
		t.Logf("kill %d: %v after %d fragments", k+1, err, rs.fragments.Load()-served)
	}
	if err := syncDir(t, dir, rs.base); err != nil {
		t.Fatal(err)
	}
	var store graphstore.Store
	if ep := strings.Fields(sparqlEnv); len(ep) == 3 {
		hc, _ := testnet.Client(t)
		store = sparql.New(sparql.Endpoints{Update: ep[0], Query: ep[1], GraphStore: ep[2]}, hc)
	} else {
		bs, err := boltstore.OpenDir(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		store = bs
	}
	defer store.Close()
	if got, want := graphOf(t, store, rs.base+"c/"), m.triples(t); !rdf.Isomorphic(got, want) {
		t.Fatalf("after kills: %d triples, want %d", len(got), len(want))
	}
}

var retry0 = RetryPolicy{BaseDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond}
