package sparql

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// raw sends one request straight to Virtuoso and returns status and body.
func raw(t *testing.T, method, u, contentType string, body io.Reader, chunked bool) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if chunked {
		req.ContentLength = -1 // unknown: Go sends Transfer-Encoding: chunked
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/n-triples")
	// A connection of its own: Virtuoso reads a chunked body as the next
	// request on the connection and answers it 501.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestVirtuosoQuirks pins the Virtuoso behaviours the store works around,
// each next to the store doing the same thing right: if a Virtuoso
// release changes one, this test says which workaround to revisit.
func TestVirtuosoQuirks(t *testing.T) {
	s, srv := open(t, true)
	ctx := context.Background()
	r := ex("r")
	withBlank := []rdf.Triple{{S: r, P: ex("p"), O: bn("b")}, {S: bn("b"), P: ex("q"), O: lit("x")}}

	t.Run("INSERT DATA refuses blank nodes", func(t *testing.T) {
		code, body := raw(t, http.MethodPost, srv.UpdateURL, "application/sparql-update",
			strings.NewReader(`INSERT DATA { GRAPH <`+g1+`> { <http://example.org/r> <http://example.org/p> _:b } }`), false)
		if code/100 == 2 || !strings.Contains(body, "SP031") {
			t.Errorf("Virtuoso took blank nodes in INSERT DATA: %d %.200s", code, body)
		}
		if err := s.ApplyFragment(ctx, g1, r, withBlank); err != nil {
			t.Fatal(err)
		}
		got, err := s.Fragment(ctx, g1, r)
		if err != nil {
			t.Fatal(err)
		}
		sameGraph(t, "fragment with a blank node", got, withBlank)
	})

	t.Run("blank nodes come back as nodeID:// in JSON and _:b in N-Triples", func(t *testing.T) {
		q := url.Values{"query": {`SELECT ?o WHERE { GRAPH <` + g1 + `> { <http://example.org/r> ?p ?o } }`}}
		req, _ := http.NewRequest(http.MethodGet, srv.QueryURL+"?"+q.Encode(), nil)
		req.Header.Set("Accept", "application/sparql-results+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"value": "nodeID://`) {
			t.Errorf("JSON results: %s", b)
		}
		for tr, err := range s.Triples(ctx, g1) {
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range []rdf.Term{tr.S, tr.O} {
				if x.IsIRI() && strings.HasPrefix(x.Value, "nodeID:") {
					t.Errorf("a blank node came back as the IRI %v", x)
				}
			}
		}
	})

	t.Run("a chunked body is ignored", func(t *testing.T) {
		g := "http://example.org/chunked"
		code, body := raw(t, http.MethodPut, srv.GraphStoreURL+"?graph="+url.QueryEscape(g), "application/n-triples",
			strings.NewReader("<http://example.org/s> <http://example.org/p> \"o\" .\n"), true)
		if code/100 != 2 {
			t.Fatalf("chunked PUT: %d %s", code, body)
		}
		if n := len(collect(t, s.Triples(ctx, g))); n != 0 {
			t.Errorf("Virtuoso stored %d triples of a chunked PUT; the Content-Length spool could go", n)
		}
		if err := s.ReplaceGraph(ctx, g, seq(withBlank)); err != nil {
			t.Fatal(err)
		}
		sameGraph(t, "ReplaceGraph", collect(t, s.Triples(ctx, g)), withBlank)
	})

	t.Run("nodeID IRIs name existing blank nodes", func(t *testing.T) {
		g := "http://example.org/nodeid"
		code, _ := raw(t, http.MethodPost, srv.UpdateURL, "application/sparql-update",
			strings.NewReader(`INSERT DATA { GRAPH <`+g+`> { <http://example.org/s> <http://example.org/p> <nodeID://b10000> } }`), false)
		if code != 200 {
			t.Fatalf("insert: %d", code)
		}
		for tr, err := range s.Triples(ctx, g) {
			if err != nil {
				t.Fatal(err)
			}
			if !tr.O.IsBlank() {
				t.Errorf("<nodeID://b10000> stayed an IRI: %v; the store's refusal of such IRIs could go", tr.O)
			}
		}
	})
}

// snapshot yields n triples without holding them: a chain of resources,
// every 1000th linked to one blank node first described at the start and
// last at the end, so the load must keep its identity across the whole
// snapshot. sample, if set, is called every 10,000 triples.
func snapshot(n int, sample func()) iter.Seq2[rdf.Triple, error] {
	return func(yield func(rdf.Triple, error) bool) {
		shared := bn("shared")
		if !yield(rdf.Triple{S: shared, P: ex("first"), O: lit("yes")}, nil) {
			return
		}
		for i := 1; i < n-1; i++ {
			if sample != nil && i%10000 == 0 {
				sample()
			}
			t := rdf.Triple{S: ex(fmt.Sprintf("r%d", i)), P: ex("value"), O: lit(fmt.Sprintf("value number %d of the big snapshot", i))}
			if i%1000 == 0 {
				t.O = shared
			}
			if !yield(t, nil) {
				return
			}
		}
		yield(rdf.Triple{S: shared, P: ex("last"), O: lit("yes")}, nil)
	}
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestBigSnapshot loads 20,000 triples into Virtuoso and reads them back,
// checking that a blank node shared by the first and last triples is one
// node. (100,000 triples work on a warm database in ~20 s, but a fresh
// Virtuoso 7.2.5 on a loaded machine can wedge for minutes copying that
// many; the client's memory at 100,000 is checked by TestSnapshotMemory.)
func TestBigSnapshot(t *testing.T) {
	s, _ := open(t, true)
	testSnapshot(t, s, 20_000)
}

// TestSnapshotMemory streams 100,000 triples (7 MB of N-Triples) through
// ReplaceGraph and Triples against a loopback endpoint that takes the
// upload and answers the CONSTRUCT with it, checking that the client's
// heap stays bounded both ways.
func TestSnapshotMemory(t *testing.T) {
	ep := &echoEndpoint{}
	srv := httptest.NewServer(ep)
	t.Cleanup(srv.Close)
	c, _ := testnet.Client(t)
	s := New(Endpoints{Update: srv.URL + "/sparql", Query: srv.URL + "/sparql", GraphStore: srv.URL + "/gsp"}, c)
	testSnapshot(t, s, 100_000)
}

// echoEndpoint keeps the last Graph Store upload in a file and answers
// every CONSTRUCT with it; updates succeed.
type echoEndpoint struct {
	mu   sync.Mutex
	path string
}

func (e *echoEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case r.Method == http.MethodPut:
		f, err := os.CreateTemp("", "echo-*.nt")
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		io.Copy(f, r.Body)
		f.Close()
		if e.path != "" {
			os.Remove(e.path)
		}
		e.path = f.Name()
		w.WriteHeader(http.StatusCreated)
	case r.Header.Get("Content-Type") == "application/sparql-update":
		io.Copy(io.Discard, r.Body)
	default:
		w.Header().Set("Content-Type", "application/n-triples")
		if e.path != "" {
			f, err := os.Open(e.path)
			if err == nil {
				io.Copy(w, f)
				f.Close()
			}
		}
	}
}

func testSnapshot(t *testing.T, s *Store, n int) {
	t.Helper()
	ctx := context.Background()
	base := heap()
	var peak uint64
	sample := func() { peak = max(peak, heap()) }
	if err := s.ReplaceGraph(ctx, g1, snapshot(n, sample)); err != nil {
		t.Fatal(err)
	}
	const bound = 4 << 20
	if peak > base+bound {
		t.Errorf("heap grew by %d MB while loading %d triples, want < %d MB", (peak-base)>>20, n, bound>>20)
	}
	base, peak = heap(), 0
	count := 0
	sharedLabel := map[string]int{}
	for tr, err := range s.Triples(ctx, g1) {
		if err != nil {
			t.Fatal(err)
		}
		if count++; count%10000 == 0 {
			sample()
		}
		if tr.S.IsBlank() {
			sharedLabel[tr.S.Value]++
		}
		if tr.O.IsBlank() {
			sharedLabel[tr.O.Value]++
		}
	}
	if peak > base+bound {
		t.Errorf("heap grew by %d MB while reading %d triples, want < %d MB", (peak-base)>>20, n, bound>>20)
	}
	if count != n {
		t.Errorf("read %d triples, want %d", count, n)
	}
	if len(sharedLabel) != 1 {
		t.Errorf("the shared blank node became %d nodes", len(sharedLabel))
	}
	for _, c := range sharedLabel {
		if want := 2 + (n-2)/1000; c != want {
			t.Errorf("the shared blank node occurs %d times, want %d", c, want)
		}
	}
}

// TestReplaceGraphFails: an iterator error or a cancelled context midway
// leaves g as it was and no temporary graph behind.
func TestReplaceGraphFails(t *testing.T) {
	for _, gsp := range []bool{true, false} {
		t.Run(fmt.Sprintf("gsp=%v", gsp), func(t *testing.T) {
			s, _ := open(t, gsp)
			ctx := context.Background()
			old := chain(ex("r"), 2, "c")
			if err := s.ReplaceGraph(ctx, g1, seq(old)); err != nil {
				t.Fatal(err)
			}
			boom := fmt.Errorf("source failed")
			failing := func(yield func(rdf.Triple, error) bool) {
				for i := range 5000 {
					if !yield(rdf.Triple{S: ex(fmt.Sprint(i)), P: ex("p"), O: lit("x")}, nil) {
						return
					}
				}
				yield(rdf.Triple{}, boom)
			}
			if err := s.ReplaceGraph(ctx, g1, failing); !errorsIs(err, boom) {
				t.Fatalf("ReplaceGraph with a failing source: %v", err)
			}
			cctx, cancel := context.WithCancel(ctx)
			cancelling := func(yield func(rdf.Triple, error) bool) {
				for i := range 5000 {
					if i == 2000 {
						cancel()
					}
					if !yield(rdf.Triple{S: ex(fmt.Sprint(i)), P: ex("p"), O: lit("x")}, nil) {
						return
					}
				}
			}
			if err := s.ReplaceGraph(cctx, g1, cancelling); !errorsIs(err, context.Canceled) {
				t.Fatalf("ReplaceGraph with a cancelled context: %v", err)
			}
			sameGraph(t, "graph after failed replaces", collect(t, s.Triples(ctx, g1)), old)
			gs, err := s.Graphs(ctx)
			if err != nil || len(gs) != 1 {
				t.Fatalf("Graphs = %v, %v", gs, err)
			}
		})
	}
}
