// Package graphstoretest is the contract suite every graphstore.Store
// implementation passes: call Run from a test of the implementation.
package graphstoretest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// Graph names and resources the cases use.
const (
	G1 = "http://e/g1"
	G2 = "http://e/g2"
)

// BnodeClosure is testdata/sdshare/push/bnode-closure.nt, the SDShare Push
// sample whose fragment of <http://psi.test.no/1> nests two blank nodes.
const BnodeClosure = `<http://psi.test.no/1> <http://psi.test.no/foo> "blah" .
<http://psi.test.no/1> <http://psi.test.no/child> _:bn1 .
_:bn1 <http://psi.test.no/foo> "meh" .
_:bn1 <http://www.w3.org/2002/07/owl#sameAs> <http://psi.test.no/2> .
_:bn1 <http://psi.test.no/child> _:bn2 .
_:bn2 <http://psi.test.no/foo> "bar" .
`

// op is one write of a case: a ReplaceGraph when r is empty, else an
// ApplyFragment of resource r.
type op struct {
	g, r, nt string
}

// Run runs the contract suite. open returns a new, empty store for one
// subtest; the suite closes it (Close is idempotent, so open may also
// register a Close with t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) graphstore.Store) {
	t.Run("Writes", func(t *testing.T) { testWrites(t, open) })
	t.Run("Fragment", func(t *testing.T) { testFragment(t, open) })
	t.Run("Triples", func(t *testing.T) { testTriples(t, open) })
	t.Run("Invalid", func(t *testing.T) { testInvalid(t, open) })
	t.Run("ReplaceFails", func(t *testing.T) { testReplaceFails(t, open) })
	t.Run("Cancelled", func(t *testing.T) { testCancelled(t, open) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, open) })
	t.Run("Close", func(t *testing.T) { testClose(t, open) })
	t.Run("Batch", func(t *testing.T) { testBatch(t, open) })
}

// Seq yields ts, for ReplaceGraph.
func Seq(ts []rdf.Triple) iter.Seq2[rdf.Triple, error] {
	return func(yield func(rdf.Triple, error) bool) {
		for _, t := range ts {
			if !yield(t, nil) {
				return
			}
		}
	}
}

func apply(t *testing.T, s graphstore.Store, o op) {
	t.Helper()
	ctx := context.Background()
	var err error
	if o.r == "" {
		err = s.ReplaceGraph(ctx, o.g, Seq(NT(o.nt)))
	} else {
		err = s.ApplyFragment(ctx, o.g, rdf.IRI(o.r), NT(o.nt))
	}
	if err != nil {
		t.Fatalf("%+v: %v", o, err)
	}
}

// All collects g's triples and fails t on an error or a duplicate.
func All(t testing.TB, s graphstore.Store, g string) []rdf.Triple {
	t.Helper()
	var out []rdf.Triple
	seen := map[rdf.Triple]bool{}
	for tr, err := range s.Triples(context.Background(), g) {
		if err != nil {
			t.Fatalf("Triples(%s): %v", g, err)
		}
		if seen[tr] {
			t.Errorf("Triples(%s) yields %v twice", g, tr)
		}
		seen[tr] = true
		out = append(out, tr)
	}
	return out
}

// Checker is a store that can verify its own integrity; the suite calls
// Check wherever it compares the store with what it expects.
type Checker interface {
	Check(ctx context.Context) error
}

// Expect checks that the store's graphs are exactly want (name → N-Triples
// in the NT subset), up to blank node renaming, and runs the store's
// Check if it has one.
func Expect(t testing.TB, s graphstore.Store, want map[string]string) {
	t.Helper()
	if c, ok := s.(Checker); ok {
		if err := c.Check(context.Background()); err != nil {
			t.Errorf("Check: %v", err)
		}
	}
	var names []string
	for g, nt := range want {
		if len(NT(nt)) > 0 {
			names = append(names, g)
		}
	}
	slices.Sort(names)
	got, err := s.Graphs(context.Background())
	if err != nil {
		t.Fatalf("Graphs: %v", err)
	}
	if !slices.Equal(got, names) {
		t.Errorf("Graphs = %q, want %q", got, names)
	}
	for _, g := range slices.Sorted(maps.Keys(want)) {
		w := NT(want[g])
		if tr := All(t, s, g); !Isomorphic(tr, w) {
			t.Errorf("graph %s: %s\n%s\nwant (up to blank node labels):\n%s", g, rdf.IsomorphicDiff(tr, w), format(tr), format(w))
		}
	}
}

func format(ts []rdf.Triple) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "  %s %s %s .\n", t.S, t.P, t.O)
	}
	return b.String()
}

func testWrites(t *testing.T, open func(t *testing.T) graphstore.Store) {
	const (
		a = `<http://e/a> <http://e/p> "a" .
<http://e/a> <http://e/q> _:x .
_:x <http://e/p> "x"@en .`
		b = `<http://e/b> <http://e/p> "b"^^<http://e/dt> .`
		c = `<http://e/c> <http://e/p> <http://e/a> .`
		r = "http://e/R"
	)
	for _, tc := range []struct {
		name string
		ops  []op
		want map[string]string
	}{
		{"replace", []op{{G1, "", a}}, map[string]string{G1: a}},
		{"replace twice", []op{{G1, "", a}, {G1, "", b}}, map[string]string{G1: b}},
		{"replace with empty", []op{{G1, "", a}, {G1, "", ""}}, map[string]string{G1: ""}},
		{"replace unknown with empty", []op{{G1, "", ""}}, map[string]string{G1: ""}},
		{"graphs independent", []op{{G1, "", a}, {G2, "", b}, {G1, "", c}, {"http://e/g3", "", a}},
			map[string]string{G1: c, G2: b, "http://e/g3": a}},
		{"replace: a label is one node within a snapshot", []op{{G1, "", `<http://e/a> <http://e/p> _:x .
<http://e/b> <http://e/p> _:x .
_:x <http://e/p> _:y .
_:y <http://e/p> _:x .`}}, map[string]string{G1: `<http://e/a> <http://e/p> _:n .
<http://e/b> <http://e/p> _:n .
_:n <http://e/p> _:m .
_:m <http://e/p> _:n .`}},
		{"replace: duplicates kept once", []op{{G1, "", a + "\n" + a}}, map[string]string{G1: a}},
		{"replace: same label in two snapshots", []op{{G1, "", `<http://e/a> <http://e/p> _:x .`}, {G2, "", `<http://e/b> <http://e/p> _:x .`}},
			map[string]string{G1: `<http://e/a> <http://e/p> _:x .`, G2: `<http://e/b> <http://e/p> _:y .`}},
		{"apply: insert into new graph", []op{{G1, r, `<http://e/R> <http://e/p> "1" .`}},
			map[string]string{G1: `<http://e/R> <http://e/p> "1" .`}},
		{"apply: insert next to others", []op{{G1, "", a}, {G1, r, `<http://e/R> <http://e/p> _:b .
_:b <http://e/p> "1" .`}},
			map[string]string{G1: a + "\n" + `<http://e/R> <http://e/p> _:b .
_:b <http://e/p> "1" .`}},
		{"apply: change", []op{{G1, "", a}, {G1, r, `<http://e/R> <http://e/p> "1" .`}, {G1, r, `<http://e/R> <http://e/p> "2" .
<http://e/R> <http://e/q> "3" .`}},
			map[string]string{G1: a + "\n" + `<http://e/R> <http://e/p> "2" .
<http://e/R> <http://e/q> "3" .`}},
		{"apply: delete with empty fragment", []op{{G1, "", a}, {G1, r, `<http://e/R> <http://e/p> _:b .
_:b <http://e/p> "1" .`}, {G1, r, ""}}, map[string]string{G1: a}},
		{"apply: delete last resource empties the graph", []op{{G1, r, `<http://e/R> <http://e/p> "1" .`}, {G1, r, ""}},
			map[string]string{G1: ""}},
		{"apply: delete unknown resource", []op{{G1, "", a}, {G1, r, ""}, {G2, r, ""}}, map[string]string{G1: a, G2: ""}},
		{"apply: nested blank nodes deleted", []op{{G1, "", a + "\n" + `<http://e/R> <http://e/p> _:b1 .
_:b1 <http://e/p> _:b2 .
_:b2 <http://e/p> _:b3 .
_:b3 <http://e/p> "deep" .
_:b2 <http://e/q> <http://e/a> .`}, {G1, r, `<http://e/R> <http://e/p> "new" .`}},
			map[string]string{G1: a + "\n" + `<http://e/R> <http://e/p> "new" .`}},
		{"apply: cyclic blank nodes deleted", []op{{G1, "", a + "\n" + `<http://e/R> <http://e/p> _:b1 .
_:b1 <http://e/p> _:b2 .
_:b2 <http://e/p> _:b1 .
_:b2 <http://e/p> _:b2 .`}, {G1, r, ""}},
			map[string]string{G1: a}},
		{"apply: R to <X> to _:x keeps X's blank node", []op{{G1, "", `<http://e/R> <http://e/p> <http://e/X> .
<http://e/R> <http://e/q> _:r .
_:r <http://e/p> "r" .
<http://e/X> <http://e/p> _:x .
_:x <http://e/p> "x" .`}, {G1, r, ""}},
			map[string]string{G1: `<http://e/X> <http://e/p> _:x .
_:x <http://e/p> "x" .`}},
		{"apply: a blank node referring back to R", []op{{G1, r, `<http://e/R> <http://e/p> _:b .
_:b <http://e/p> <http://e/R> .`}, {G1, r, `<http://e/R> <http://e/p> "1" .`}},
			map[string]string{G1: `<http://e/R> <http://e/p> "1" .`}},
		{"apply: the same label in two fragments does not merge", []op{
			{G1, r, `<http://e/R> <http://e/p> _:b1 .
_:b1 <http://e/p> "1" .`},
			{G1, "http://e/S", `<http://e/S> <http://e/p> _:b1 .
_:b1 <http://e/p> "1" .`}},
			map[string]string{G1: `<http://e/R> <http://e/p> _:x .
_:x <http://e/p> "1" .
<http://e/S> <http://e/p> _:y .
_:y <http://e/p> "1" .`}},
		{"apply: a label of a fragment does not meet the snapshot's", []op{
			{G1, "", `<http://e/S> <http://e/p> _:b1 .`},
			{G1, r, `<http://e/R> <http://e/p> _:b1 .`}},
			map[string]string{G1: `<http://e/S> <http://e/p> _:x .
<http://e/R> <http://e/p> _:y .`}},
		{"apply: twice has the effect of once", []op{{G1, "", a},
			{G1, r, `<http://e/R> <http://e/p> _:b1 .
_:b1 <http://e/p> _:b2 .
_:b2 <http://e/p> "1" .`},
			{G1, r, `<http://e/R> <http://e/p> _:b1 .
_:b1 <http://e/p> _:b2 .
_:b2 <http://e/p> "1" .`}},
			map[string]string{G1: a + "\n" + `<http://e/R> <http://e/p> _:b1 .
_:b1 <http://e/p> _:b2 .
_:b2 <http://e/p> "1" .`}},
		{"apply: only in its graph", []op{{G1, r, `<http://e/R> <http://e/p> "1" .`}, {G2, r, `<http://e/R> <http://e/p> "2" .`}, {G1, r, ""}},
			map[string]string{G1: "", G2: `<http://e/R> <http://e/p> "2" .`}},
		{"apply: bnode-closure.nt", []op{{G1, "", BnodeClosure + `<http://psi.test.no/2> <http://psi.test.no/foo> "two" .`},
			{G1, "http://psi.test.no/1", `<http://psi.test.no/1> <http://psi.test.no/foo> "new" .`}},
			map[string]string{G1: `<http://psi.test.no/2> <http://psi.test.no/foo> "two" .
<http://psi.test.no/1> <http://psi.test.no/foo> "new" .`}},
		{"apply: bnode-closure.nt as a push into an empty graph", []op{{G1, "http://psi.test.no/1", BnodeClosure}},
			map[string]string{G1: BnodeClosure}},
		{"replace after apply", []op{{G1, r, `<http://e/R> <http://e/p> "1" .`}, {G1, "", b}}, map[string]string{G1: b}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			for _, o := range tc.ops {
				apply(t, s, o)
			}
			Expect(t, s, tc.want)
		})
	}
}

func testFragment(t *testing.T, open func(t *testing.T) graphstore.Store) {
	s := open(t)
	defer s.Close()
	apply(t, s, op{G1, "", BnodeClosure + `<http://psi.test.no/2> <http://psi.test.no/foo> "two" .
<http://psi.test.no/2> <http://psi.test.no/child> _:c .
_:c <http://psi.test.no/foo> "c" .
_:c <http://psi.test.no/back> <http://psi.test.no/1> .
<http://e/C> <http://e/p> _:c1 .
_:c1 <http://e/p> _:c2 .
_:c2 <http://e/p> _:c1 .`})
	for _, tc := range []struct {
		name, g, r, want string
	}{
		{"nested blank nodes", G1, "http://psi.test.no/1", BnodeClosure},
		{"stops at IRIs", G1, "http://psi.test.no/2", `<http://psi.test.no/2> <http://psi.test.no/foo> "two" .
<http://psi.test.no/2> <http://psi.test.no/child> _:c .
_:c <http://psi.test.no/foo> "c" .
_:c <http://psi.test.no/back> <http://psi.test.no/1> .`},
		{"cycle", G1, "http://e/C", `<http://e/C> <http://e/p> _:c1 .
_:c1 <http://e/p> _:c2 .
_:c2 <http://e/p> _:c1 .`},
		{"unknown resource", G1, "http://e/none", ""},
		{"object only", G1, "http://e/p", ""},
		{"unknown graph", G2, "http://psi.test.no/1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Fragment(context.Background(), tc.g, rdf.IRI(tc.r))
			if err != nil {
				t.Fatal(err)
			}
			if want := NT(tc.want); !Isomorphic(got, want) || len(got) != len(want) {
				t.Errorf("Fragment(%s) =\n%s\nwant\n%s", tc.r, format(got), format(want))
			}
			if tc.want == "" && got != nil {
				t.Errorf("Fragment(%s) = %v, want nil", tc.r, got)
			}
		})
	}
	t.Run("round trip through ApplyFragment", func(t *testing.T) {
		ctx := context.Background()
		f, err := s.Fragment(ctx, G1, rdf.IRI("http://psi.test.no/1"))
		if err != nil {
			t.Fatal(err)
		}
		before := All(t, s, G1)
		if err := s.ApplyFragment(ctx, G1, rdf.IRI("http://psi.test.no/1"), f); err != nil {
			t.Fatal(err)
		}
		if after := All(t, s, G1); !Isomorphic(before, after) {
			t.Errorf("applying a resource's own fragment changed the graph:\n%s\nwas\n%s", format(after), format(before))
		}
	})
}

func testTriples(t *testing.T, open func(t *testing.T) graphstore.Store) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	var big []rdf.Triple
	for i := range 5000 {
		big = append(big, rdf.Triple{S: rdf.IRI(fmt.Sprintf("http://e/s%d", i%700)), P: rdf.IRI("http://e/p"), O: rdf.Literal(fmt.Sprint(i))})
		if i%3 == 0 {
			b := rdf.Blank(fmt.Sprint("b", i))
			big = append(big, rdf.Triple{S: rdf.IRI(fmt.Sprintf("http://e/s%d", i%700)), P: rdf.IRI("http://e/q"), O: b},
				rdf.Triple{S: b, P: rdf.IRI("http://e/p"), O: rdf.LangLiteral("x", "EN-gb")})
		}
	}
	if err := s.ReplaceGraph(ctx, G1, Seq(big)); err != nil {
		t.Fatal(err)
	}
	t.Run("all", func(t *testing.T) {
		if got := All(t, s, G1); len(got) != len(big) || !Isomorphic(got, big) {
			t.Errorf("Triples yields %d triples, not the %d given (up to blank node labels)", len(got), len(big))
		}
	})
	t.Run("unknown graph yields nothing", func(t *testing.T) {
		if got := All(t, s, G2); len(got) != 0 {
			t.Errorf("Triples(unknown) = %d triples", len(got))
		}
	})
	t.Run("break early", func(t *testing.T) {
		n := 0
		for _, err := range s.Triples(ctx, G1) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == 3 {
				break
			}
		}
		// The store is still usable (a held snapshot was released).
		if err := s.ApplyFragment(ctx, G1, rdf.IRI("http://e/new"), NT(`<http://e/new> <http://e/p> "1" .`)); err != nil {
			t.Fatal(err)
		}
		if err := s.ApplyFragment(ctx, G1, rdf.IRI("http://e/new"), nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("snapshot", func(t *testing.T) {
		// A write from another goroutine while an iteration runs does
		// not show in it.
		n := 0
		var wg sync.WaitGroup
		for _, err := range s.Triples(ctx, G1) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == 1 {
				wg.Go(func() {
					if err := s.ReplaceGraph(ctx, G1, Seq(NT(`<http://e/a> <http://e/p> "only" .`))); err != nil {
						t.Error(err)
					}
				})
			}
		}
		wg.Wait()
		if n != len(big) {
			t.Errorf("iteration saw %d triples, want the %d of its snapshot", n, len(big))
		}
		Expect(t, s, map[string]string{G1: `<http://e/a> <http://e/p> "only" .`})
	})
}

func testInvalid(t *testing.T, open func(t *testing.T) graphstore.Store) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	const a = `<http://e/a> <http://e/p> "a" .`
	apply(t, s, op{G1, "", a})
	iri, lit, bn := rdf.IRI("http://e/x"), rdf.Literal("l"), rdf.Blank("b")
	bad := []rdf.Triple{
		{S: lit, P: iri, O: iri},
		{S: iri, P: bn, O: iri},
		{S: iri, P: lit, O: iri},
		{S: iri, P: iri},
		{P: iri, O: iri},
		{S: rdf.IRI(""), P: iri, O: iri},
	}
	for i, tr := range bad {
		ts := []rdf.Triple{{S: iri, P: iri, O: iri}, tr}
		if err := s.ReplaceGraph(ctx, G1, Seq(ts)); !errors.Is(err, graphstore.ErrInvalid) {
			t.Errorf("ReplaceGraph with bad triple %d: %v, want ErrInvalid", i, err)
		}
		if err := s.ApplyFragment(ctx, G1, iri, ts); !errors.Is(err, graphstore.ErrInvalid) {
			t.Errorf("ApplyFragment with bad triple %d: %v, want ErrInvalid", i, err)
		}
	}
	for _, r := range []rdf.Term{{}, bn, lit, rdf.IRI("")} {
		if err := s.ApplyFragment(ctx, G1, r, nil); !errors.Is(err, graphstore.ErrInvalid) {
			t.Errorf("ApplyFragment(r=%+v): %v, want ErrInvalid", r, err)
		}
		if _, err := s.Fragment(ctx, G1, r); !errors.Is(err, graphstore.ErrInvalid) {
			t.Errorf("Fragment(r=%+v): %v, want ErrInvalid", r, err)
		}
	}
	if err := s.ReplaceGraph(ctx, "", Seq(NT(a))); !errors.Is(err, graphstore.ErrInvalid) {
		t.Errorf("ReplaceGraph(\"\"): %v, want ErrInvalid", err)
	}
	if err := s.ApplyFragment(ctx, "", iri, nil); !errors.Is(err, graphstore.ErrInvalid) {
		t.Errorf("ApplyFragment(\"\"): %v, want ErrInvalid", err)
	}
	for _, err := range s.Triples(ctx, "") {
		if !errors.Is(err, graphstore.ErrInvalid) {
			t.Errorf("Triples(\"\"): %v, want ErrInvalid", err)
		}
	}
	Expect(t, s, map[string]string{G1: a})
}

var errHalfway = errors.New("graphstoretest: source failed half-way")

func testReplaceFails(t *testing.T, open func(t *testing.T) graphstore.Store) {
	const old = `<http://e/a> <http://e/p> "old" .
<http://e/a> <http://e/q> _:x .
_:x <http://e/p> "x" .`
	for _, n := range []int{0, 1, 1000, 70000} {
		t.Run(fmt.Sprint(n, " triples then an error"), func(t *testing.T) {
			s := open(t)
			defer s.Close()
			apply(t, s, op{G1, "", old})
			apply(t, s, op{G2, "", old})
			ts := func(yield func(rdf.Triple, error) bool) {
				for i := range n {
					if !yield(rdf.Triple{S: rdf.IRI(fmt.Sprint("http://e/s", i)), P: rdf.IRI("http://e/p"), O: rdf.Blank(fmt.Sprint(i % 100))}, nil) {
						return
					}
				}
				yield(rdf.Triple{}, errHalfway)
			}
			if err := s.ReplaceGraph(context.Background(), G1, ts); !errors.Is(err, errHalfway) {
				t.Fatalf("ReplaceGraph = %v, want the source's error", err)
			}
			Expect(t, s, map[string]string{G1: old, G2: old})
			// The store still works.
			apply(t, s, op{G1, "", `<http://e/b> <http://e/p> "new" .`})
			Expect(t, s, map[string]string{G1: `<http://e/b> <http://e/p> "new" .`, G2: old})
		})
	}
}

func testCancelled(t *testing.T, open func(t *testing.T) graphstore.Store) {
	const old = `<http://e/a> <http://e/p> "old" .`
	s := open(t)
	defer s.Close()
	apply(t, s, op{G1, "", old})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.ReplaceGraph(ctx, G1, Seq(NT(`<http://e/b> <http://e/p> "new" .`))); !errors.Is(err, context.Canceled) {
		t.Errorf("ReplaceGraph: %v, want context.Canceled", err)
	}
	if err := s.ApplyFragment(ctx, G1, rdf.IRI("http://e/a"), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("ApplyFragment: %v, want context.Canceled", err)
	}
	if _, err := s.Fragment(ctx, G1, rdf.IRI("http://e/a")); !errors.Is(err, context.Canceled) {
		t.Errorf("Fragment: %v, want context.Canceled", err)
	}
	if _, err := s.Graphs(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Graphs: %v, want context.Canceled", err)
	}
	n := 0
	for _, err := range s.Triples(ctx, G1) {
		if n++; !errors.Is(err, context.Canceled) {
			t.Errorf("Triples: %v, want context.Canceled", err)
		}
	}
	if n != 1 {
		t.Errorf("Triples of a cancelled context yields %d times, want one error", n)
	}
	// Cancelled while the source is being read.
	ctx, cancel = context.WithCancel(context.Background())
	ts := func(yield func(rdf.Triple, error) bool) {
		for i := 0; ; i++ {
			if i == 5000 {
				cancel()
			}
			if i > 200000 {
				return // the store ignored the cancellation; the check below fails
			}
			if !yield(rdf.Triple{S: rdf.IRI(fmt.Sprint("http://e/s", i)), P: rdf.IRI("http://e/p"), O: rdf.Literal("x")}, nil) {
				return
			}
		}
	}
	if err := s.ReplaceGraph(ctx, G1, ts); !errors.Is(err, context.Canceled) {
		t.Errorf("ReplaceGraph cancelled half-way: %v, want context.Canceled", err)
	}
	Expect(t, s, map[string]string{G1: old})
}

func testConcurrent(t *testing.T, open func(t *testing.T) graphstore.Store) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	const writers, readers, rounds = 4, 4, 30
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range rounds {
				r := rdf.IRI(fmt.Sprintf("http://e/w%d", w))
				ts := NT(fmt.Sprintf(`<http://e/w%d> <http://e/p> _:b .
_:b <http://e/p> "%d" .`, w, i))
				if err := s.ApplyFragment(ctx, G1, r, ts); err != nil {
					t.Error(err)
					return
				}
				if i%10 == 0 {
					g := fmt.Sprintf("http://e/g-w%d", w)
					if err := s.ReplaceGraph(ctx, g, Seq(ts)); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	for range readers {
		wg.Go(func() {
			for range rounds {
				// Every resource's fragment is whole: two triples, one
				// blank node.
				for w := range writers {
					f, err := s.Fragment(ctx, G1, rdf.IRI(fmt.Sprintf("http://e/w%d", w)))
					if err != nil {
						t.Error(err)
						return
					}
					if len(f) != 0 && len(f) != 2 {
						t.Errorf("fragment of w%d has %d triples, want 2", w, len(f))
					}
				}
				n := 0
				for _, err := range s.Triples(ctx, G1) {
					if err != nil {
						t.Error(err)
						return
					}
					n++
				}
				if n%2 != 0 {
					t.Errorf("graph has %d triples, want an even number", n)
				}
				if _, err := s.Graphs(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	want := map[string]string{G1: ""}
	for w := range writers {
		want[G1] += fmt.Sprintf("<http://e/w%d> <http://e/p> _:b%d .\n_:b%d <http://e/p> \"%d\" .\n", w, w, w, rounds-1)
		want[fmt.Sprintf("http://e/g-w%d", w)] = fmt.Sprintf("<http://e/w%d> <http://e/p> _:b .\n_:b <http://e/p> \"%d\" .\n", w, rounds/10*10-10)
	}
	Expect(t, s, want)
}

func testClose(t *testing.T, open func(t *testing.T) graphstore.Store) {
	s := open(t)
	ctx := context.Background()
	apply(t, s, op{G1, "", `<http://e/a> <http://e/p> "a" .`})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.ReplaceGraph(ctx, G1, Seq(nil)); !errors.Is(err, graphstore.ErrClosed) {
		t.Errorf("ReplaceGraph after Close: %v, want ErrClosed", err)
	}
	if err := s.ApplyFragment(ctx, G1, rdf.IRI("http://e/a"), nil); !errors.Is(err, graphstore.ErrClosed) {
		t.Errorf("ApplyFragment after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Fragment(ctx, G1, rdf.IRI("http://e/a")); !errors.Is(err, graphstore.ErrClosed) {
		t.Errorf("Fragment after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Graphs(ctx); !errors.Is(err, graphstore.ErrClosed) {
		t.Errorf("Graphs after Close: %v, want ErrClosed", err)
	}
	n := 0
	for _, err := range s.Triples(ctx, G1) {
		if n++; !errors.Is(err, graphstore.ErrClosed) {
			t.Errorf("Triples after Close: %v, want ErrClosed", err)
		}
	}
	if n != 1 {
		t.Errorf("Triples after Close yields %d times, want one error", n)
	}
}
