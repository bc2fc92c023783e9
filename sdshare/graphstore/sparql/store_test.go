package sparql

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/sparqltest"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
)

// open returns a store over the shared Virtuoso, emptied of what earlier
// tests wrote; gsp chooses whether snapshots go through the Graph Store
// Protocol.
func open(t testing.TB, gsp bool) (*Store, *sparqltest.Server) {
	t.Helper()
	srv := sparqltest.Shared(t)
	srv.Reset(t)
	c, _ := testnet.Client(t)
	// Loading and moving 100,000 triples takes Virtuoso ~20 s on a busy
	// machine: more than testnet's default per-request limit.
	c.Timeout = 5 * time.Minute
	ep := Endpoints{Update: srv.UpdateURL, Query: srv.QueryURL}
	if gsp {
		ep.GraphStore = srv.GraphStoreURL
	}
	s := New(ep, c)
	t.Cleanup(func() { s.Close() })
	return s, srv
}

func seq(ts []rdf.Triple) iter.Seq2[rdf.Triple, error] {
	return func(yield func(rdf.Triple, error) bool) {
		for _, t := range ts {
			if !yield(t, nil) {
				return
			}
		}
	}
}

func collect(t testing.TB, it iter.Seq2[rdf.Triple, error]) []rdf.Triple {
	t.Helper()
	var out []rdf.Triple
	for tr, err := range it {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tr)
	}
	return out
}

// canon describes a graph whose blank nodes form trees (a test's own
// data) label-free: each blank node is replaced by the sorted description
// of its statements, so two graphs are isomorphic iff canon is equal.
// TODO(after merging rdfcore): use rdf.Isomorphic.
func canon(ts []rdf.Triple) []string {
	bySubj := map[string][]rdf.Triple{}
	objBlank := map[string]bool{}
	for _, t := range ts {
		if t.S.IsBlank() {
			bySubj[t.S.Value] = append(bySubj[t.S.Value], t)
		}
		if t.O.IsBlank() {
			objBlank[t.O.Value] = true
		}
	}
	var desc func(t rdf.Term, depth int) string
	desc = func(t rdf.Term, depth int) string {
		if !t.IsBlank() {
			b, _ := appendTerm(nil, t, "")
			return string(b)
		}
		if depth > 50 {
			return "[cycle]"
		}
		var parts []string
		for _, u := range bySubj[t.Value] {
			parts = append(parts, desc(u.P, depth+1)+" "+desc(u.O, depth+1))
		}
		slices.Sort(parts)
		return "[" + strings.Join(parts, "; ") + "]"
	}
	var out []string
	for _, t := range ts {
		if t.S.IsBlank() && objBlank[t.S.Value] {
			continue // described inside its parent
		}
		out = append(out, desc(t.S, 0)+" "+desc(t.P, 0)+" "+desc(t.O, 0))
	}
	slices.Sort(out)
	return out
}

func sameGraph(t testing.TB, what string, got, want []rdf.Triple) {
	t.Helper()
	g, w := canon(got), canon(want)
	if !slices.Equal(g, w) {
		t.Errorf("%s:\ngot  %d triples\n  %s\nwant %d triples\n  %s", what, len(got), strings.Join(g, "\n  "), len(want), strings.Join(w, "\n  "))
	}
}

var (
	ex  = func(s string) rdf.Term { return rdf.IRI("http://example.org/" + s) }
	g1  = "http://example.org/graph/1"
	g2  = "http://example.org/graph/2"
	bn  = rdf.Blank
	lit = rdf.Literal
)

// chain returns r → _:c1 → … → _:cn, each with a label literal.
func chain(r rdf.Term, n int, prefix string) []rdf.Triple {
	ts := []rdf.Triple{{S: r, P: ex("name"), O: lit(prefix)}}
	prev := r
	for i := 1; i <= n; i++ {
		b := bn(fmt.Sprintf("%s%d", prefix, i))
		ts = append(ts, rdf.Triple{S: prev, P: ex("next"), O: b}, rdf.Triple{S: b, P: ex("level"), O: lit(fmt.Sprint(i))})
		prev = b
	}
	return ts
}

func TestRoundTrip(t *testing.T) {
	for _, gsp := range []bool{true, false} {
		t.Run(fmt.Sprintf("gsp=%v", gsp), func(t *testing.T) {
			s, _ := open(t, gsp)
			ctx := context.Background()
			ts := []rdf.Triple{
				{S: ex("a"), P: ex("p"), O: lit("plain \"quoted\" \\ back\nslash é 𝄞")},
				{S: ex("a"), P: ex("p"), O: rdf.LangLiteral("hallo", "de-AT")},
				{S: ex("a"), P: ex("p"), O: rdf.TypedLiteral("2026-11-24T00:00:00Z", "http://www.w3.org/2001/XMLSchema#dateTime")},
				{S: ex("a"), P: ex("q"), O: bn("x.y-z")},
				{S: bn("x.y-z"), P: ex("p"), O: lit("in bnode")},
				{S: ex("a"), P: ex("q"), O: bn("other")},
				{S: bn("other"), P: ex("p"), O: lit("in bnode")},
			}
			if err := s.ReplaceGraph(ctx, g1, seq(ts)); err != nil {
				t.Fatal(err)
			}
			sameGraph(t, "Triples", collect(t, s.Triples(ctx, g1)), ts)
			gs, err := s.Graphs(ctx)
			if err != nil || !slices.Equal(gs, []string{g1}) {
				t.Fatalf("Graphs = %v, %v; want [%s]", gs, err, g1)
			}
			// Replacing again replaces, and blank nodes do not merge
			// with the old ones.
			if err := s.ReplaceGraph(ctx, g1, seq(ts[3:])); err != nil {
				t.Fatal(err)
			}
			sameGraph(t, "Triples after second replace", collect(t, s.Triples(ctx, g1)), ts[3:])
			// An empty snapshot empties g.
			if err := s.ReplaceGraph(ctx, g1, seq(nil)); err != nil {
				t.Fatal(err)
			}
			if got := collect(t, s.Triples(ctx, g1)); len(got) != 0 {
				t.Fatalf("after empty snapshot: %v", got)
			}
			if gs, err := s.Graphs(ctx); err != nil || len(gs) != 0 {
				t.Fatalf("Graphs after empty snapshot = %v, %v", gs, err)
			}
		})
	}
}

// TestFragmentClosure applies fragments whose blank-node nesting is deeper
// than the first probe (StartDepth), cyclic, and shared with another
// resource's IRI-linked data, and checks exactly r's closure goes.
func TestFragmentClosure(t *testing.T) {
	s, _ := open(t, true)
	ctx := context.Background()
	r, x := ex("r"), ex("x")
	deep := chain(r, 3*StartDepth+1, "d")
	cyc := []rdf.Triple{
		{S: r, P: ex("ring"), O: bn("c1")},
		{S: bn("c1"), P: ex("next"), O: bn("c2")},
		{S: bn("c2"), P: ex("next"), O: bn("c1")},
	}
	// x is reached from r through an IRI: not part of r's closure.
	other := append(chain(x, 2, "o"), rdf.Triple{S: r, P: ex("see"), O: x})
	if err := s.ReplaceGraph(ctx, g1, seq(slices.Concat(deep, cyc, other))); err != nil {
		t.Fatal(err)
	}
	frag, err := s.Fragment(ctx, g1, r)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(deep) + len(cyc) + 1; len(frag) != want {
		t.Fatalf("Fragment has %d triples, want %d", len(frag), want)
	}
	newFrag := []rdf.Triple{{S: r, P: ex("name"), O: lit("new")}, {S: r, P: ex("has"), O: bn("n")}, {S: bn("n"), P: ex("v"), O: lit("1")}}
	for range 2 { // idempotent
		if err := s.ApplyFragment(ctx, g1, r, newFrag); err != nil {
			t.Fatal(err)
		}
		sameGraph(t, "graph after ApplyFragment", collect(t, s.Triples(ctx, g1)), slices.Concat(newFrag, chain(x, 2, "o")))
	}
	got, err := s.Fragment(ctx, g1, r)
	if err != nil {
		t.Fatal(err)
	}
	sameGraph(t, "Fragment", got, newFrag)
	// An empty fragment deletes r.
	if err := s.ApplyFragment(ctx, g1, r, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Fragment(ctx, g1, r); err != nil || got != nil {
		t.Fatalf("Fragment of a deleted resource = %v, %v", got, err)
	}
	sameGraph(t, "graph after delete", collect(t, s.Triples(ctx, g1)), chain(x, 2, "o"))
	// A new graph appears in Graphs through ApplyFragment alone.
	if err := s.ApplyFragment(ctx, g2, r, newFrag); err != nil {
		t.Fatal(err)
	}
	if gs, err := s.Graphs(ctx); err != nil || !slices.Equal(gs, []string{g1, g2}) {
		t.Fatalf("Graphs = %v, %v", gs, err)
	}
}

// TestTooDeep: nesting beyond MaxDepth is refused, not half-deleted.
func TestTooDeep(t *testing.T) {
	s, _ := open(t, true)
	ctx := context.Background()
	r := ex("r")
	if err := s.ReplaceGraph(ctx, g1, seq(chain(r, MaxDepth+2, "d"))); err != nil {
		t.Fatal(err)
	}
	err := s.ApplyFragment(ctx, g1, r, nil)
	if !errorsIs(err, ErrTooDeep) {
		t.Fatalf("ApplyFragment on %d-deep nesting: %v, want ErrTooDeep", MaxDepth+2, err)
	}
	if n := len(collect(t, s.Triples(ctx, g1))); n != len(chain(r, MaxDepth+2, "d")) {
		t.Fatalf("graph changed: %d triples", n)
	}
}
