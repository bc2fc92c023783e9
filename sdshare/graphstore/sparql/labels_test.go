package sparql

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
)

// keeper is a Graph Store on loopback that keeps the blank node labels it
// receives, as Oxigraph's server does: it stores the N-Triples of every
// Graph Store PUT and INSERT template verbatim per graph, and answers the
// depth probe with no blank nodes.
type keeper struct {
	mu     sync.Mutex
	graphs map[string]string
}

var (
	insertTemplate = regexp.MustCompile(`(?s)INSERT \{ GRAPH <([^>]+)> \{\n(.*?)\} \} WHERE \{\}`)
	addOp          = regexp.MustCompile(`ADD SILENT <([^>]+)> TO <([^>]+)>`)
	blankLabel     = regexp.MustCompile(`_:[A-Za-z0-9_]+`)
)

func (k *keeper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case r.Method == http.MethodPut:
		k.graphs[r.URL.Query().Get("graph")] = string(b)
		w.WriteHeader(http.StatusCreated)
	case r.Header.Get("Content-Type") == "application/sparql-update":
		for _, m := range insertTemplate.FindAllStringSubmatch(string(b), -1) {
			k.graphs[m[1]] += m[2]
		}
		if m := addOp.FindStringSubmatch(string(b)); m != nil {
			k.graphs[m[2]] = k.graphs[m[1]]
			delete(k.graphs, m[1])
		}
	default:
		w.Header().Set("Content-Type", "application/sparql-results+json")
		json.NewEncoder(w).Encode(map[string]any{"head": map[string]any{"vars": []string{}}, "results": map[string]any{"bindings": []any{}}})
	}
}

// labels returns the blank node labels g holds.
func (k *keeper) labels(g string) map[string]bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]bool{}
	for _, l := range blankLabel.FindAllString(k.graphs[g], -1) {
		out[l] = true
	}
	return out
}

// TestBlankLabelsPerCall: the same _:b1 given to two ReplaceGraph calls
// (Graph Store PUT and INSERT template) and to two ApplyFragment calls
// reaches a label-keeping store as different labels, so its graphs never
// share a blank node.
func TestBlankLabelsPerCall(t *testing.T) {
	ctx := context.Background()
	ts := []rdf.Triple{
		{S: ex("r"), P: ex("p"), O: bn("b1")},
		{S: bn("b1"), P: ex("q"), O: bn("b2")},
		{S: bn("b2"), P: ex("q"), O: lit("x")},
	}
	for _, gsp := range []bool{true, false} {
		k := &keeper{graphs: map[string]string{}}
		srv := httptest.NewServer(k)
		t.Cleanup(srv.Close)
		c, _ := testnet.Client(t)
		ep := Endpoints{Update: srv.URL + "/sparql", Query: srv.URL + "/sparql"}
		if gsp {
			ep.GraphStore = srv.URL + "/gsp"
		}
		s := New(ep, c)
		for _, g := range []string{g1, g2} {
			if err := s.ReplaceGraph(ctx, g, seq(ts)); err != nil {
				t.Fatal(err)
			}
		}
		l1, l2 := k.labels(g1), k.labels(g2)
		if len(l1) != 2 || len(l2) != 2 {
			t.Fatalf("gsp=%v: labels %v and %v, want 2 each", gsp, l1, l2)
		}
		for l := range l1 {
			if l2[l] {
				t.Errorf("gsp=%v: label %s sent in both snapshots (%v, %v)", gsp, l, l1, l2)
			}
		}
		// Two fragments of the same graph: their labels differ too.
		for range 2 {
			if err := s.ApplyFragment(ctx, g1, ex("s"), ts[1:2]); err != nil {
				t.Fatal(err)
			}
		}
		if got := k.labels(g1); len(got) != 2+4 {
			t.Errorf("gsp=%v: %d labels in %s after two fragments, want 6 distinct: %v", gsp, len(got), g1, got)
		}
	}
}

// TestVirtuosoNoSharedBlanks: two graphs loaded with the same labels, by
// snapshot and by fragment, share no blank node in Virtuoso.
func TestVirtuosoNoSharedBlanks(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, true)
	ts := []rdf.Triple{
		{S: ex("r"), P: ex("p"), O: bn("b1")},
		{S: bn("b1"), P: ex("q"), O: lit("x")},
	}
	for _, g := range []string{g1, g2} {
		if err := s.ReplaceGraph(ctx, g, seq(ts)); err != nil {
			t.Fatal(err)
		}
		if err := s.ApplyFragment(ctx, g, ex("s"), []rdf.Triple{{S: ex("s"), P: ex("p"), O: bn("b1")}, {S: bn("b1"), P: ex("q"), O: lit("y")}}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(q string) int {
		t.Helper()
		resp, err := s.query(ctx, "test", q, "application/sparql-results+json", "application/sparql-results+json", "application/json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Results struct{ Bindings []map[string]any }
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		return len(r.Results.Bindings)
	}
	blanks := "SELECT DISTINCT ?b WHERE { GRAPH <" + g1 + "> { ?b ?p ?o } FILTER isBlank(?b) }"
	if n := count(blanks); n != 2 {
		t.Fatalf("%d blank nodes in %s, want 2", n, g1)
	}
	shared := "SELECT DISTINCT ?b WHERE { GRAPH <" + g1 + "> { ?b ?p ?o } GRAPH <" + g2 + "> { ?b ?p2 ?o2 } FILTER isBlank(?b) }"
	if n := count(shared); n != 0 {
		t.Errorf("%d blank nodes shared by %s and %s", n, g1, g2)
	}
}
