package aggregate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/sparqltest"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/sparql"
)

// The three collections of TestRDFAggregation, one per RDF syntax the
// server reads, in two versions. All three use the same blank node
// labels (_:b1, _:b2, _:genid1, as every Turtle and RDF/XML parser
// names its anonymous nodes): a store that joined them would merge
// unrelated nodes. Each blank node is reached from one resource only (it
// belongs to one fragment).
var rdfVersions = []struct{ file, v1, v2 string }{
	{"c.ttl", `@prefix ex: <http://ex.test/> .
<http://ex.test/ttl/r1> ex:name "one"@en ;
  ex:addr [ ex:street "Main" ; ex:geo [ ex:lat "1" ; ex:lon "2" ] ] .
<http://ex.test/ttl/r2> ex:knows _:b1 .
_:b1 ex:name "anon" ; ex:next _:b2 .
_:b2 ex:name "anon2" .
<http://ex.test/ttl/r4> ex:name "same" .
`, `@prefix ex: <http://ex.test/> .
<http://ex.test/ttl/r1> ex:name "one"@en ;
  ex:addr [ ex:street "Side" ; ex:geo [ ex:lat "3" ; ex:lon "2" ] ] .
<http://ex.test/ttl/r3> ex:knows _:b1 , _:b2 .
_:b1 ex:name "anon" .
_:b2 ex:name "new" ; ex:list ( "a" "b" ) .
<http://ex.test/ttl/r4> ex:name "same" .
`},
	{"c.nt", `<http://ex.test/nt/r1> <http://ex.test/addr> _:b1 .
_:b1 <http://ex.test/street> "Main" .
_:b1 <http://ex.test/geo> _:b2 .
_:b2 <http://ex.test/lat> "1" .
<http://ex.test/nt/r2> <http://ex.test/knows> _:genid1 .
_:genid1 <http://ex.test/name> "anon" .
<http://ex.test/nt/r4> <http://ex.test/name> "same" .
`, `<http://ex.test/nt/r1> <http://ex.test/addr> _:b1 .
_:b1 <http://ex.test/street> "Main" .
_:b1 <http://ex.test/geo> _:b2 .
_:b2 <http://ex.test/lat> "4" .
<http://ex.test/nt/r3> <http://ex.test/knows> _:genid1 .
_:genid1 <http://ex.test/next> _:genid2 .
_:genid2 <http://ex.test/next> _:genid1 .
_:genid2 <http://ex.test/name> "cycle" .
<http://ex.test/nt/r4> <http://ex.test/name> "same" .
`},
	{"c.rdf", `<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://ex.test/">
  <rdf:Description rdf:about="http://ex.test/rdf/r1">
    <ex:addr rdf:parseType="Resource"><ex:street>Main</ex:street><ex:geo rdf:nodeID="b2"/></ex:addr>
  </rdf:Description>
  <rdf:Description rdf:nodeID="b2"><ex:lat>1</ex:lat></rdf:Description>
  <rdf:Description rdf:about="http://ex.test/rdf/r2"><ex:knows rdf:nodeID="b1"/></rdf:Description>
  <rdf:Description rdf:nodeID="b1"><ex:name>anon</ex:name></rdf:Description>
  <rdf:Description rdf:about="http://ex.test/rdf/r4"><ex:name>same</ex:name></rdf:Description>
</rdf:RDF>
`, `<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://ex.test/">
  <rdf:Description rdf:about="http://ex.test/rdf/r1">
    <ex:addr rdf:parseType="Resource"><ex:street>Main</ex:street><ex:geo rdf:nodeID="b2"/></ex:addr>
  </rdf:Description>
  <rdf:Description rdf:nodeID="b2"><ex:lat>1</ex:lat><ex:lon>5</ex:lon></rdf:Description>
  <rdf:Description rdf:about="http://ex.test/rdf/r3">
    <ex:knows><rdf:Description><ex:name>anon</ex:name><ex:next rdf:nodeID="b1"/></rdf:Description></ex:knows>
  </rdf:Description>
  <rdf:Description rdf:nodeID="b1"><ex:name xml:lang="en">deep</ex:name></rdf:Description>
  <rdf:Description rdf:about="http://ex.test/rdf/r4"><ex:name>same</ex:name></rdf:Description>
</rdf:RDF>
`},
}

// TestRDFAggregation is issue 22's RDF aggregation test: three SDShare
// collections (Turtle, N-Triples, RDF/XML, with blank nodes), each on its
// own real SDShare server on loopback and each its own Source, merged by
// syncSDShare into the embedded graph store and into Virtuoso, one named
// graph each. After the first runs (snapshots) and after a change of
// every collection (fragments), each graph is isomorphic to its
// collection's file and no blank node appears in two graphs.
func TestRDFAggregation(t *testing.T) {
	t.Run("boltstore", func(t *testing.T) {
		s, err := boltstore.OpenDir(t.TempDir(), &boltstore.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		rdfAggregation(t, s, func(t *testing.T, graphs []string) {
			// The store writes a blank node as _:b<n>, n from one
			// counter over the whole store: a label seen in two graphs
			// would be one node in both.
			owner := map[string]string{}
			for _, g := range graphs {
				for tr, err := range s.Triples(context.Background(), g) {
					if err != nil {
						t.Fatal(err)
					}
					for _, x := range []rdf.Term{tr.S, tr.O} {
						if !x.IsBlank() {
							continue
						}
						if o, ok := owner[x.Value]; ok && o != g {
							t.Errorf("blank node _:%s in %s and %s", x.Value, o, g)
						}
						owner[x.Value] = g
					}
				}
			}
			if len(owner) < 9 {
				t.Errorf("%d blank nodes in the store, want at least 9", len(owner))
			}
		})
	})
	t.Run("virtuoso", func(t *testing.T) {
		srv := sparqltest.Shared(t)
		srv.Reset(t)
		hc, _ := testnet.Client(t)
		hc.Timeout = time.Minute
		s := sparql.New(sparql.Endpoints{Update: srv.UpdateURL, Query: srv.QueryURL, GraphStore: srv.GraphStoreURL}, hc)
		t.Cleanup(func() { s.Close() })
		count := func(t *testing.T, q string) int {
			t.Helper()
			resp, err := hc.PostForm(srv.QueryURL, url.Values{"query": {q}, "format": {"application/sparql-results+json"}})
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var r struct {
				Results struct{ Bindings []map[string]any }
			}
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d %v", q, resp.StatusCode, err)
			}
			return len(r.Results.Bindings)
		}
		rdfAggregation(t, s, func(t *testing.T, graphs []string) {
			// blanks matches ?b to the blank nodes of g (as subject or
			// object); tag keeps the other variables apart.
			blanks := func(g, tag string) string {
				return "GRAPH <" + g + "> { { ?b ?p" + tag + " ?o" + tag + " } UNION { ?s" + tag + " ?q" + tag + " ?b } }"
			}
			total := 0
			for i, g := range graphs {
				n := count(t, "SELECT DISTINCT ?b WHERE { "+blanks(g, "1")+" FILTER isBlank(?b) }")
				if n < 3 {
					t.Errorf("%d blank nodes in %s, want at least 3", n, g)
				}
				total += n
				// The query that finds shared nodes finds a graph's own.
				if m := count(t, "SELECT DISTINCT ?b WHERE { "+blanks(g, "1")+" "+blanks(g, "2")+" FILTER isBlank(?b) }"); m != n {
					t.Errorf("%d blank nodes shared by %s and itself, want %d", m, g, n)
				}
				for _, h := range graphs[i+1:] {
					if n := count(t, "SELECT DISTINCT ?b WHERE { "+blanks(g, "1")+" "+blanks(h, "2")+" FILTER isBlank(?b) }"); n != 0 {
						t.Errorf("%d blank nodes shared by %s and %s", n, g, h)
					}
				}
			}
			// One query over all three graphs: as many distinct blank
			// nodes as the graphs have each.
			var u []string
			for _, g := range graphs {
				u = append(u, "{ "+blanks(g, "1")+" }")
			}
			if n := count(t, "SELECT DISTINCT ?b WHERE { "+strings.Join(u, " UNION ")+" FILTER isBlank(?b) }"); n != total {
				t.Errorf("%d distinct blank nodes over the graphs, want %d (the sum)", n, total)
			}
		})
	})
}

// rdfAggregation runs the test's steps over store; noneShared checks
// that no blank node is in two of the graphs.
func rdfAggregation(t *testing.T, store graphstore.Store, noneShared func(t *testing.T, graphs []string)) {
	ctx := context.Background()
	hc, _ := testnet.Client(t)
	hc.Timeout = time.Minute
	root := t.TempDir()
	type col struct {
		src  Source
		path string
		fmt  rdf.Format
		v2   string
		base string
		load func()
	}
	var cols []*col
	for i, v := range rdfVersions {
		dir := t.TempDir()
		path := filepath.Join(dir, v.file)
		writeFile(t, path, v.v1)
		base, srv := sdshareServer(t, map[string]string{"c": path})
		f := map[string]rdf.Format{".ttl": rdf.Turtle, ".nt": rdf.NTriples, ".rdf": rdf.RDFXML}[filepath.Ext(path)]
		c := &col{src: Source{ID: fmt.Sprintf("src%d", i), URL: base, Kind: KindSDShare, Timeout: 30 * time.Second},
			path: path, fmt: f, v2: v.v2, base: base}
		c.src.Dest = c.src.ID
		c.load = func() { reload(t, srv, "c") }
		cols = append(cols, c)
	}
	// check runs every Source once, expecting fetched documents (a
	// snapshot, or fragments changed or added) and deleted ones
	// (fragments emptied) per Source, then compares the graphs.
	check := func(step string, fetched, deleted int) {
		t.Helper()
		var graphs []string
		for _, c := range cols {
			res := syncSDShare(ctx, c.src, filepath.Join(root, c.src.Dest), store, hc, nil)
			if res.Err != nil || !res.ok() || len(res.Graphs) != 1 || res.Fetched != fetched || res.Deleted != deleted {
				t.Fatalf("%s: %s: %+v", step, c.src.ID, res)
			}
			t.Logf("%s: %s: fetched %d, deleted %d", step, c.src.ID, res.Fetched, res.Deleted)
			g := res.Graphs[0]
			graphs = append(graphs, g)
			var got []rdf.Triple
			for tr, err := range store.Triples(ctx, g) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, tr)
			}
			b, err := os.ReadFile(c.path)
			if err != nil {
				t.Fatal(err)
			}
			var want []rdf.Triple
			for tr, err := range rdf.Parse(strings.NewReader(string(b)), c.fmt, "http://ex.test/") {
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, tr)
			}
			if d := rdf.IsomorphicDiff(got, want); d != "" {
				t.Errorf("%s: graph %s (%d triples) is not isomorphic to %s (%d): %s", step, g, len(got), filepath.Base(c.path), len(want), d)
			}
		}
		if len(slices.Compact(slices.Sorted(slices.Values(graphs)))) != len(cols) {
			t.Fatalf("%s: graphs %v, want one per Source", step, graphs)
		}
		stored, err := store.Graphs(ctx)
		if err != nil || !slices.Equal(stored, slices.Sorted(slices.Values(graphs))) {
			t.Errorf("%s: store's graphs %v (%v), want %v", step, stored, err, graphs)
		}
		noneShared(t, graphs)
	}
	check("snapshots", 1, 0)
	for _, c := range cols {
		writeFile(t, c.path, c.v2)
		c.load()
	}
	check("fragments", 2, 1) // r1 changed, r3 added, r2 removed
}
