package graphstoretest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// batchCase is one fragment of testBatch: resource r's N-Triples, or raw
// triples when ts is set; bad marks one the store must refuse.
type batchCase struct {
	r   string
	nt  string
	ts  []rdf.Triple
	bad bool
}

func (c batchCase) fragment() graphstore.Fragment {
	ts := c.ts
	if ts == nil {
		ts = NT(c.nt)
	}
	r := rdf.IRI(c.r)
	if c.r == "" {
		r = rdf.Blank("x")
	}
	return graphstore.Fragment{Resource: r, Triples: ts}
}

// testBatch checks graphstore.ApplyFragments (a BatchApplier's own, or
// the fallback) against ApplyFragment of each fragment in turn on a
// second store: the same graphs, and an error exactly for the fragments
// ApplyFragment refuses.
func testBatch(t *testing.T, open func(t *testing.T) graphstore.Store) {
	ctx := context.Background()
	const start = `<http://e/a> <http://e/p> "a0" .
<http://e/a> <http://e/q> _:x .
_:x <http://e/p> "a0 deep" .
<http://e/b> <http://e/p> "b0" .
<http://e/b> <http://e/p> <http://e/a> .
<http://e/c> <http://e/p> "c0" .`
	g1 := []batchCase{
		{r: "http://e/a", nt: `<http://e/a> <http://e/p> "a1" .
<http://e/a> <http://e/q> _:x .
_:x <http://e/p> _:y .
_:y <http://e/p> "a1 deeper" .`},
		{r: "http://e/b", nt: ""}, // deleted
		// A term new in the batch that a later fragment drops again.
		{r: "http://e/d", nt: `<http://e/d> <http://e/p> <http://e/only-in-the-batch> .
<http://e/d> <http://e/p> "a literal long enough not to be inlined in an index key, so that it is a dictionary term of its own, which the batch adds and then drops again before it commits: the store must not keep it" .`},
		{r: "", nt: `_:x <http://e/p> "refused" .`, bad: true}, // not an IRI
		{r: "http://e/e", ts: []rdf.Triple{{S: rdf.IRI("http://e/e"), P: rdf.Literal("p"), O: rdf.Literal("x")}}, bad: true},
		{r: "http://e/d", nt: `<http://e/d> <http://e/p> "d2" .`},
		{r: "http://e/a", nt: `<http://e/a> <http://e/p> "a2" .
<http://e/a> <http://e/q> _:x .
_:x <http://e/p> "a2 deep" .`}, // the same resource again: the later wins
		{r: "http://e/c", nt: `<http://e/c> <http://e/p> "c0" .`}, // unchanged
		{r: "http://e/b", nt: ""},                                 // deleted twice
		{r: "http://e/f", nt: `<http://e/f> <http://e/p> _:a .
_:a <http://e/p> _:a .`}, // a blank node cycle
	}
	// G2: emptied and filled again in one batch; G3: deletes only, on
	// a graph that does not exist.
	g2 := []batchCase{{r: "http://e/a", nt: ""}, {r: "http://e/a", nt: `<http://e/a> <http://e/p> "back" .`}}
	g3 := []batchCase{{r: "http://e/a", nt: ""}}
	const g3name = "http://e/g3"

	one, batch := open(t), open(t)
	defer one.Close()
	defer batch.Close()
	for _, s := range []graphstore.Store{one, batch} {
		apply(t, s, op{G1, "", start})
		apply(t, s, op{G2, "", `<http://e/a> <http://e/p> "only" .`})
	}
	for _, g := range []struct {
		name  string
		cases []batchCase
	}{{G1, g1}, {G2, g2}, {g3name, g3}} {
		fs := make([]graphstore.Fragment, len(g.cases))
		for i, c := range g.cases {
			fs[i] = c.fragment()
			err := one.ApplyFragment(ctx, g.name, fs[i].Resource, fs[i].Triples)
			if c.bad != (err != nil) || c.bad && !errors.Is(err, graphstore.ErrInvalid) {
				t.Fatalf("%s: ApplyFragment %d: %v (refused: %v)", g.name, i, err, c.bad)
			}
		}
		errs := graphstore.ApplyFragments(ctx, batch, g.name, fs)
		for i, c := range g.cases {
			var err error
			if errs != nil {
				err = errs[i]
			}
			if c.bad != (err != nil) || c.bad && !errors.Is(err, graphstore.ErrInvalid) {
				t.Errorf("%s: ApplyFragments, fragment %d: %v (refused: %v)", g.name, i, err, c.bad)
			}
		}
	}
	same(t, one, batch)
	if got := All(t, batch, G2); !Isomorphic(got, NT(`<http://e/a> <http://e/p> "back" .`)) {
		t.Errorf("G2 after emptied and filled in one batch: %s", format(got))
	}

	// A batch write that fails changes nothing, and says so for every
	// fragment: here, a cancelled context.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	fs := []graphstore.Fragment{g1[1].fragment(), g1[5].fragment()}
	errs := graphstore.ApplyFragments(cctx, batch, G1, fs)
	if len(errs) != len(fs) || !errors.Is(errs[0], context.Canceled) || !errors.Is(errs[1], context.Canceled) {
		t.Errorf("cancelled ApplyFragments: %v, want context.Canceled for each", errs)
	}
	if b, ok := batch.(graphstore.BatchApplier); ok {
		if _, err := b.ApplyFragments(cctx, G1, fs); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled BatchApplier.ApplyFragments: %v, want context.Canceled", err)
		}
	}
	same(t, one, batch)
}

// same checks that store b holds the graphs of store a, up to blank
// node labels, and runs b's Check if it has one.
func same(t *testing.T, a, b graphstore.Store) {
	t.Helper()
	if c, ok := b.(Checker); ok {
		if err := c.Check(context.Background()); err != nil {
			t.Errorf("Check: %v", err)
		}
	}
	ga, err := a.Graphs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gb, err := b.Graphs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ga, gb) {
		t.Fatalf("Graphs = %q, one by one %q", gb, ga)
	}
	for _, g := range ga {
		if x, y := All(t, a, g), All(t, b, g); !Isomorphic(x, y) {
			t.Errorf("graph %s: %s\n%s\none by one:\n%s", g, rdf.IsomorphicDiff(y, x), format(y), format(x))
		}
	}
}
