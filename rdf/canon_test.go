package rdf

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestIsomorphicTable(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		iso  bool
		diff string // part of IsomorphicDiff's reason when not isomorphic
	}{
		{"empty", "", "", true, ""},
		{"ground equal, other order", "<http://ex/a> <http://ex/p> \"1\" .\n<http://ex/a> <http://ex/p> \"2\" .", "<http://ex/a> <http://ex/p> \"2\" .\n<http://ex/a> <http://ex/p> \"1\" .", true, ""},
		{"duplicates ignored", "<http://ex/a> <http://ex/p> \"1\" .\n<http://ex/a> <http://ex/p> \"1\" .", "<http://ex/a> <http://ex/p> \"1\" .", true, ""},
		{"ground differs", "<http://ex/a> <http://ex/p> \"1\" .", "<http://ex/a> <http://ex/p> \"2\" .", false, "only in a"},
		{"count differs", "<http://ex/a> <http://ex/p> \"1\" .", "<http://ex/a> <http://ex/p> \"1\" .\n_:x <http://ex/p> \"1\" .", false, "a has 1 triples, b has 2"},
		{"relabelled", "<http://ex/r> <http://ex/p> _:a .\n_:a <http://ex/q> _:b .\n_:b <http://ex/v> \"x\" .",
			"<http://ex/r> <http://ex/p> _:z .\n_:z <http://ex/q> _:y .\n_:y <http://ex/v> \"x\" .", true, ""},
		{"blank direction differs", "_:a <http://ex/p> _:b .\n_:b <http://ex/p> \"x\" .", "_:a <http://ex/p> _:b .\n_:a <http://ex/p> \"x\" .", false, "blank node"},
		{"one blank vs two", "_:a <http://ex/p> \"1\" .\n_:a <http://ex/q> \"2\" .", "_:a <http://ex/p> \"1\" .\n_:b <http://ex/q> \"2\" .", false, "blank nodes"},
		{"identical siblings", "<http://ex/r> <http://ex/p> _:a .\n<http://ex/r> <http://ex/p> _:b .\n_:a <http://ex/v> \"x\" .\n_:b <http://ex/v> \"x\" .",
			"<http://ex/r> <http://ex/p> _:1 .\n<http://ex/r> <http://ex/p> _:2 .\n_:2 <http://ex/v> \"x\" .\n_:1 <http://ex/v> \"x\" .", true, ""},
		{"self loop vs 2-cycle", "_:a <http://ex/p> _:a .\n_:b <http://ex/p> _:b .", "_:a <http://ex/p> _:b .\n_:b <http://ex/p> _:a .", false, "structures differ"},
		{"hexagon vs two triangles", ring(6, "a"), ring(3, "a") + "\n" + ring(3, "b"), false, "structures differ"},
		{"hexagon relabelled", ring(6, "a"), ring(6, "z"), true, ""},
		{"literal that looks like a blank", "<http://ex/a> <http://ex/p> \"_:x\" .", "<http://ex/a> <http://ex/p> _:x .", false, "only in a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := mustParse(t, tc.a), mustParse(t, tc.b)
			if got := Isomorphic(a, b); got != tc.iso {
				t.Errorf("Isomorphic = %v, want %v", got, tc.iso)
			}
			if got := Isomorphic(b, a); got != tc.iso {
				t.Errorf("Isomorphic(b, a) = %v, want %v", got, tc.iso)
			}
			diff := IsomorphicDiff(a, b)
			if tc.iso && diff != "" || !tc.iso && !strings.Contains(diff, tc.diff) {
				t.Errorf("IsomorphicDiff = %q, want it to contain %q", diff, tc.diff)
			}
			if ha, hb := Hash(a), Hash(b); (ha == hb) != tc.iso {
				t.Errorf("Hash equal = %v, want %v", ha == hb, tc.iso)
			}
		})
	}
}

// ring returns a directed cycle of n blank nodes over one predicate.
func ring(n int, prefix string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "_:%s%d <http://ex/next> _:%s%d .\n", prefix, i, prefix, (i+1)%n)
	}
	return b.String()
}

func TestCanonical(t *testing.T) {
	in := mustParse(t, `
<http://ex/r> <http://ex/p> _:zz .
_:zz <http://ex/v> "x" .
<http://ex/r> <http://ex/p> _:zz .
<http://ex/a> <http://ex/p> "1" .
`)
	got := Canonical(in)
	want := []string{
		`<http://ex/a> <http://ex/p> "1" .`,
		`<http://ex/r> <http://ex/p> _:c0 .`,
		`_:c0 <http://ex/v> "x" .`,
	}
	var lines []string
	for _, t := range got {
		lines = append(lines, tripleString(t))
	}
	if !slices.Equal(lines, want) {
		t.Errorf("Canonical:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if again := Canonical(got); !slices.Equal(again, got) {
		t.Error("Canonical is not idempotent")
	}
}

// randomGraph builds a graph of n blank nodes, some IRIs and literals, and
// m triples over a few predicates (few, so that refinement has ties).
func randomGraph(rng *rand.Rand, nBlank, m int) []Triple {
	preds := []Term{IRI("http://ex/p"), IRI("http://ex/q"), IRI("http://ex/r")}
	node := func(allowLiteral bool) Term {
		switch k := rng.IntN(10); {
		case k < 6:
			return Blank(fmt.Sprintf("b%d", rng.IntN(nBlank)))
		case k < 8 || !allowLiteral:
			return IRI(fmt.Sprintf("http://ex/i%d", rng.IntN(5)))
		default:
			return Literal(fmt.Sprintf("l%d", rng.IntN(3)))
		}
	}
	ts := make([]Triple, m)
	for i := range ts {
		ts[i] = Triple{node(false), preds[rng.IntN(len(preds))], node(true)}
	}
	return ts
}

// relabel renames blank nodes randomly, shuffles and duplicates triples.
func relabel(rng *rand.Rand, ts []Triple) []Triple {
	names := map[string]string{}
	perm := rng.Perm(len(ts) * 2)
	ren := func(t Term) Term {
		if t.Kind != KindBlank {
			return t
		}
		if _, ok := names[t.Value]; !ok {
			names[t.Value] = fmt.Sprintf("x%d", perm[len(names)])
		}
		return Blank(names[t.Value])
	}
	out := make([]Triple, 0, len(ts)+2)
	for _, t := range ts {
		out = append(out, Triple{ren(t.S), t.P, ren(t.O)})
	}
	if len(out) > 0 {
		out = append(out, out[rng.IntN(len(out))])
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// mutate changes one triple so that the graph is no longer isomorphic: the
// object of a triple becomes a literal no triple uses.
func mutate(rng *rand.Rand, ts []Triple) []Triple {
	ts = dedupe(ts)
	out := slices.Clone(ts)
	i := rng.IntN(len(out))
	out[i].O = Literal("changed")
	return out
}

func TestIsomorphicProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	for round := range rounds {
		nBlank := 1 + rng.IntN(12)
		g := randomGraph(rng, nBlank, 1+rng.IntN(30))
		h := relabel(rng, g)
		if !Isomorphic(g, h) {
			t.Fatalf("round %d: relabelled graph not isomorphic: %s\n%v\n%v", round, IsomorphicDiff(g, h), g, h)
		}
		if Hash(g) != Hash(h) {
			t.Errorf("round %d: relabelled graph has another Hash\n%s", round, ntDoc(g))
		}
		x := mutate(rng, g)
		if Isomorphic(g, x) || IsomorphicDiff(g, x) == "" {
			t.Fatalf("round %d: changed graph isomorphic", round)
		}
		if Hash(g) == Hash(x) {
			t.Errorf("round %d: changed graph has the same Hash", round)
		}
	}
}

// TestIsomorphicRegular covers graphs refinement alone cannot tell apart:
// all blank nodes look alike (one predicate, in and out degree one), so
// the answer comes from the backtracking search.
func TestIsomorphicRegular(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cycles := func(sizes ...int) []Triple {
		var b strings.Builder
		for i, n := range sizes {
			b.WriteString(ring(n, fmt.Sprintf("r%d_", i)))
		}
		return mustParse(t, b.String())
	}
	a := cycles(3, 3, 4, 5)
	for range 20 {
		if !Isomorphic(a, relabel(rng, a)) {
			t.Fatal("relabelled cycles not isomorphic")
		}
	}
	if Isomorphic(a, cycles(3, 4, 3, 5)) != true {
		t.Error("same cycles in another order not isomorphic")
	}
	for _, other := range [][]int{{6, 4, 5}, {3, 3, 9}, {3, 7, 5}, {15}} {
		if Isomorphic(a, cycles(other...)) {
			t.Errorf("cycles %v isomorphic to 3,3,4,5", other)
		}
		if Hash(a) == Hash(cycles(other...)) {
			t.Errorf("cycles %v: same Hash", other)
		}
	}
}

// TestIsomorphicLarge compares a store-sized graph: 100k triples with
// 20k blank nodes (including a 5k-long RDF list, which naive refinement
// handles in thousands of rounds).
func TestIsomorphicLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("100k-triple comparison; run without -short")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	g := largeGraph(100_000, 20_000)
	h := relabel(rng, g)
	if !Isomorphic(g, h) {
		t.Fatalf("large graph not isomorphic to its relabelling: %s", IsomorphicDiff(g, h))
	}
	if Hash(g) != Hash(h) {
		t.Error("large graph: Hash differs after relabelling")
	}
	x := slices.Clone(g)
	x[len(x)-1].O = Literal("changed")
	if Isomorphic(g, x) {
		t.Error("changed large graph isomorphic")
	}
	// Swap the roles of two list cells: same ground triples, other structure.
	y := slices.Clone(g)
	for i := range y {
		if y[i].P.Value == RDFNS+"first" {
			y[i].O = Literal("swapped")
			break
		}
	}
	if Isomorphic(g, y) {
		t.Error("list with a changed element isomorphic")
	}
}

// largeGraph builds n triples: resources with properties and blank-node
// addresses (two identical addresses for some), and one RDF list.
func largeGraph(n, nBlank int) []Triple {
	first, rest, nilT := IRI(RDFNS+"first"), IRI(RDFNS+"rest"), IRI(RDFNS+"nil")
	var ts []Triple
	listLen := nBlank / 4
	ts = append(ts, Triple{IRI("http://ex/list"), IRI("http://ex/items"), Blank("l0")})
	for i := range listLen {
		ts = append(ts, Triple{Blank(fmt.Sprintf("l%d", i)), first, Literal(fmt.Sprintf("item %d", i%7))})
		next := nilT
		if i+1 < listLen {
			next = Blank(fmt.Sprintf("l%d", i+1))
		}
		ts = append(ts, Triple{Blank(fmt.Sprintf("l%d", i)), rest, next})
	}
	b := 0
	for r := 0; len(ts) < n; r++ {
		s := IRI(fmt.Sprintf("http://ex/r%d", r))
		ts = append(ts, Triple{s, IRI("http://ex/type"), IRI("http://ex/Person")})
		ts = append(ts, Triple{s, IRI("http://ex/name"), Literal(fmt.Sprintf("n%d", r))})
		if b < nBlank-listLen {
			addr := Blank(fmt.Sprintf("a%d", b))
			b++
			ts = append(ts, Triple{s, IRI("http://ex/address"), addr})
			ts = append(ts, Triple{addr, IRI("http://ex/city"), Literal(fmt.Sprintf("c%d", r%50))})
			if r%10 == 0 && b < nBlank-listLen { // an identical twin address
				twin := Blank(fmt.Sprintf("a%d", b))
				b++
				ts = append(ts, Triple{s, IRI("http://ex/address"), twin})
				ts = append(ts, Triple{twin, IRI("http://ex/city"), Literal(fmt.Sprintf("c%d", r%50))})
			}
		}
	}
	return ts[:n]
}

func ntDoc(ts []Triple) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteString(tripleString(t) + "\n")
	}
	return b.String()
}

func BenchmarkIsomorphic(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	g := largeGraph(100_000, 20_000)
	h := relabel(rng, g)
	b.ResetTimer()
	for b.Loop() {
		if !Isomorphic(g, h) {
			b.Fatal("not isomorphic")
		}
	}
	b.ReportMetric(float64(len(g))*float64(b.N)/b.Elapsed().Seconds(), "triples/s")
}

func BenchmarkHash(b *testing.B) {
	g := largeGraph(100_000, 20_000)
	b.ResetTimer()
	for b.Loop() {
		Hash(g)
	}
	b.ReportMetric(float64(len(g))*float64(b.N)/b.Elapsed().Seconds(), "triples/s")
}

// TestHashIgnoresOrder: even for blank structures refinement cannot split
// (cycles of one predicate), the Hash depends on labels at most, never on
// triple order or duplicates.
func TestHashIgnoresOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	g := mustParse(t, ring(3, "a")+ring(3, "b")+ring(4, "c")+"_:a0 <http://ex/v> \"x\" .\n")
	want := Hash(g)
	for range 20 {
		h := slices.Clone(g)
		h = append(h, h[rng.IntN(len(h))])
		rng.Shuffle(len(h), func(i, j int) { h[i], h[j] = h[j], h[i] })
		if Hash(h) != want {
			t.Fatal("Hash changed with triple order")
		}
	}
}

// FuzzCanonical: any parsable document is isomorphic to its canonical
// form, and both have the same Hash.
func FuzzCanonical(f *testing.F) {
	f.Add("_:a <http://ex/p> _:b .\n_:b <http://ex/p> _:a .\n_:c <http://ex/p> _:c .\n")
	f.Add(ring(4, "x") + ring(2, "y"))
	f.Add("<http://ex/r> <http://ex/p> _:a .\n<http://ex/r> <http://ex/p> _:b .\n_:a <http://ex/v> \"1\" .\n_:b <http://ex/v> \"1\" .\n")
	f.Fuzz(func(t *testing.T, doc string) {
		ts, err := collect(t, doc)
		if err != nil {
			return
		}
		if len(ts) > 200 {
			return // the search is exponential on pathological inputs
		}
		c := Canonical(ts)
		if !Isomorphic(ts, c) {
			t.Fatalf("not isomorphic to its canonical form: %s", IsomorphicDiff(ts, c))
		}
		if Hash(ts) != Hash(c) {
			t.Fatalf("Hash differs from its canonical form's\n%s", ntDoc(c))
		}
		// Within any budget CanonicalBounded is Canonical; beyond it, an
		// error and nothing else.
		for _, steps := range []int64{0, 50, 1 << 40} {
			bc, _, err := CanonicalBounded(ts, steps)
			if err == nil && !slices.Equal(bc, c) || err != nil && (bc != nil || !errors.Is(err, ErrCanonicalBudget)) {
				t.Fatalf("CanonicalBounded(%d) = %d triples, %v; Canonical %d triples", steps, len(bc), err, len(c))
			}
		}
	})
}

// TestCanonicalBounded: the budget stops the labelling with
// ErrCanonicalBudget, whether the search or the greedy pass runs out; the
// outcome is the same on every run; a graph without blank nodes costs
// nothing.
func TestCanonicalBounded(t *testing.T) {
	ground := mustParse(t, "<http://ex/r> <http://ex/p> \"1\" .\n<http://ex/r> <http://ex/p> <http://ex/s> .\n")
	small := mustParse(t, ring(3, "a")+ring(2, "b")) // the search finishes
	var big strings.Builder
	for k := range 300 {
		big.WriteString(ring(4, fmt.Sprintf("c%d_", k))) // past the search: greedy
	}
	large := mustParse(t, big.String())
	for _, tc := range []struct {
		name  string
		ts    []Triple
		steps int64
		over  bool
	}{
		{"ground, no steps", ground, 0, false},
		{"small, enough", small, 1 << 20, false},
		{"small, too few", small, 20, true},
		{"large, enough", large, 1 << 24, false},
		{"large, too few for the refinement", large, 100, true},
		{"large, too few for the greedy pass", large, 14000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 {
				got, used, err := CanonicalBounded(tc.ts, tc.steps)
				if tc.over {
					if !errors.Is(err, ErrCanonicalBudget) || got != nil {
						t.Fatalf("got %d triples, %v; want ErrCanonicalBudget", len(got), err)
					}
					continue
				}
				if err != nil || !slices.Equal(got, Canonical(tc.ts)) {
					t.Fatalf("got %d triples, %v; want Canonical", len(got), err)
				}
				// Exactly the steps used are enough.
				if again, _, err := CanonicalBounded(tc.ts, used); err != nil || !slices.Equal(again, got) {
					t.Fatalf("%d steps used, but not enough the second time: %v", used, err)
				}
				if used > 0 {
					if _, _, err := CanonicalBounded(tc.ts, used-1); !errors.Is(err, ErrCanonicalBudget) {
						t.Fatalf("%d steps used, yet one less is enough", used)
					}
				}
			}
		})
	}
}

// TestCanonicalBoundedCountsLabellings: the search writes a labelling
// (every triple's line, sorted) at each leaf, so a fragment of many ground
// triples and a few interchangeable blank nodes costs far more than its
// blank nodes' edges: 1,000 ground triples and four blank pairs took
// 25-30 ms while CanonicalBounded reported 1,664 steps (3,900 ground
// triples 230 ms for 4,564), when sdshare serve labels a fragment of
// fewer than 4,096 steps again on every GET. The steps count each
// labelling's triples too (about a microsecond each, as the other steps),
// and exactly the steps used are still enough.
func TestCanonicalBoundedCountsLabellings(t *testing.T) {
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, "<http://ex/r> <http://ex/p> \"value %d\" .\n", i)
	}
	for i := range 4 {
		fmt.Fprintf(&b, "<http://ex/r> <http://ex/q> _:b%d .\n_:b%d <http://ex/p> _:c%d .\n_:c%d <http://ex/p> _:b%d .\n", i, i, i, i, i)
	}
	ts := mustParse(t, b.String())
	got, used, err := CanonicalBounded(ts, 1<<30)
	if err != nil || !slices.Equal(got, Canonical(ts)) {
		t.Fatalf("got %d triples, %v; want Canonical", len(got), err)
	}
	if used < 10*int64(len(ts)) {
		t.Errorf("%d steps for a search over many labellings of %d triples; want the lines written counted", used, len(ts))
	}
	if again, _, err := CanonicalBounded(ts, used); err != nil || !slices.Equal(again, got) {
		t.Fatalf("%d steps used, but not enough the second time: %v", used, err)
	}
	if _, _, err := CanonicalBounded(ts, used-1); !errors.Is(err, ErrCanonicalBudget) {
		t.Fatalf("%d steps used, yet one less is enough", used)
	}
}

// TestIsomorphicManyTies: 20k interchangeable blank nodes under one
// resource are one tied class; the search must pair them greedily, not
// copy the class at every step.
func TestIsomorphicManyTies(t *testing.T) {
	if testing.Short() {
		t.Skip("20k-node tie; run without -short")
	}
	var g []Triple
	for i := range manyTies {
		b := Blank(fmt.Sprintf("b%d", i))
		g = append(g, Triple{IRI("http://ex/r"), IRI("http://ex/p"), b}, Triple{b, IRI("http://ex/v"), Literal("x")})
	}
	h := relabel(rand.New(rand.NewPCG(11, 12)), g)
	if !Isomorphic(g, h) || Hash(g) != Hash(h) {
		t.Fatal("interchangeable blank nodes: not isomorphic or Hash differs")
	}
	h[0].O = Literal("y")
	if Isomorphic(g, h) {
		t.Fatal("changed graph isomorphic")
	}
}

var manyTies = 20_000

// TestHashTiedCycles: blank cycles of different lengths are tied by
// refinement without being interchangeable (a fuzz finding: a 3-cycle and a
// 2-cycle); every labelling and order of them gets one Hash.
func TestHashTiedCycles(t *testing.T) {
	next := IRI("http://ex/next")
	build := func(labels []string, sizes []int) []Triple {
		var ts []Triple
		k := 0
		for _, n := range sizes {
			for i := range n {
				ts = append(ts, Triple{Blank(labels[k+i]), next, Blank(labels[k+(i+1)%n])})
			}
			k += n
		}
		return ts
	}
	labels := []string{"a", "b", "c", "d", "e", "f", "g"}
	want := Hash(build(labels, []int{3, 2}))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 50 {
		l := slices.Clone(labels)
		rng.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
		sizes := []int{3, 2}
		if i%2 == 1 {
			sizes = []int{2, 3}
		}
		ts := build(l, sizes)
		rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
		if got := Hash(ts); got != want {
			t.Fatalf("relabelling %d: Hash differs\n%s", i, ntDoc(Canonical(ts)))
		}
	}
	if Hash(build(labels, []int{5})) == want {
		t.Error("a 5-cycle hashes like a 3-cycle and a 2-cycle")
	}
}

// TestCanonicalNTriples: the document is the canonical triples' lines,
// and Hash hashes it.
func TestCanonicalNTriples(t *testing.T) {
	for _, doc := range []string{
		"",
		"<http://x/a> <http://x/p> \"1\" .\n",
		"<http://x/a> <http://x/p> _:b .\n_:b <http://x/q> _:c .\n_:c <http://x/q> _:b .\n_:b <http://x/r> \"tab\\there\"@en .\n",
	} {
		var ts []Triple
		for tr, err := range Parse(strings.NewReader(doc), NTriples, "") {
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, tr)
		}
		out, nt := CanonicalNTriples(ts)
		var want strings.Builder
		for _, tr := range Canonical(ts) {
			want.WriteString(tr.String() + "\n")
		}
		if string(nt) != want.String() || len(out) != len(Canonical(ts)) {
			t.Errorf("%q: %q, want %q", doc, nt, want.String())
		}
		if sha256.Sum256(nt) != Hash(ts) {
			t.Errorf("%q: Hash is not the document's", doc)
		}
	}
}
