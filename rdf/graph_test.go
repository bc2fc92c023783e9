package rdf

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

func loadNT(t testing.TB, path string) []Triple {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Triple
	for tr, err := range Parse(f, NTriples, "") {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tr)
	}
	return out
}

func mustParse(t testing.TB, doc string) []Triple {
	t.Helper()
	ts, err := collect(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// ntSet renders triples as sorted N-Triples lines for comparison.
func ntSet(ts []Triple) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.S.String() + " " + t.P.String() + " " + t.O.String() + " ."
	}
	slices.Sort(out)
	return out
}

func TestGraphAddRemove(t *testing.T) {
	g := NewGraph()
	a := Triple{IRI("http://ex/s"), IRI("http://ex/p"), Literal("1")}
	b := Triple{IRI("http://ex/s"), IRI("http://ex/p"), Literal("2")}
	c := Triple{IRI("http://ex/s"), IRI("http://ex/p"), Literal("3")}
	d := Triple{Blank("x"), IRI("http://ex/p"), Literal("1")}
	for _, tr := range []Triple{a, b, c, d} {
		if !g.Add(tr) {
			t.Fatalf("Add(%v) = false on a new triple", tr)
		}
	}
	if g.Add(b) {
		t.Error("Add of a present triple = true")
	}
	if g.Len() != 4 || !g.Has(a) || !g.Has(d) {
		t.Fatalf("Len %d", g.Len())
	}
	if !g.Remove(a) || g.Remove(a) || g.Has(a) {
		t.Error("Remove a")
	}
	// The moved triple (c) is still found and removable.
	if !g.Has(c) || !g.Remove(c) || !g.Has(b) {
		t.Error("Remove after swap")
	}
	if got := g.BySubject(IRI("http://ex/s")); len(got) != 1 || got[0] != b {
		t.Errorf("BySubject = %v", got)
	}
	if !g.Remove(b) || g.BySubject(IRI("http://ex/s")) != nil {
		t.Error("subject not emptied")
	}
	var subjects []Term
	for s := range g.Subjects() {
		subjects = append(subjects, s)
	}
	if len(subjects) != 1 || subjects[0] != Blank("x") {
		t.Errorf("Subjects = %v", subjects)
	}
	var all []Triple
	for tr := range g.All() {
		all = append(all, tr)
	}
	if len(all) != 1 || all[0] != d || g.Len() != 1 {
		t.Errorf("All = %v", all)
	}
}

func TestGraphBySubjectIsACopy(t *testing.T) {
	g := NewGraph()
	tr := Triple{IRI("http://ex/s"), IRI("http://ex/p"), Literal("1")}
	g.Add(tr)
	g.BySubject(tr.S)[0] = Triple{}
	if got := g.BySubject(tr.S); got[0] != tr {
		t.Error("caller changed the graph through BySubject")
	}
}

func TestFragmentPushFixture(t *testing.T) {
	ts := loadNT(t, "../testdata/sdshare/push/bnode-closure.nt")
	g := NewGraph()
	for _, tr := range ts {
		g.Add(tr)
	}
	// Another resource's statements stay out.
	other := mustParse(t, "<http://psi.test.no/2> <http://psi.test.no/foo> _:o .\n_:o <http://psi.test.no/foo> \"x\" .\n")
	for _, tr := range other {
		g.Add(tr)
	}
	frag := g.Fragment(IRI("http://psi.test.no/1"))
	if !slices.Equal(ntSet(frag), ntSet(ts)) {
		t.Errorf("fragment:\n%s\nwant\n%s", strings.Join(ntSet(frag), "\n"), strings.Join(ntSet(ts), "\n"))
	}
	if n := g.RemoveFragment(IRI("http://psi.test.no/1")); n != len(ts) {
		t.Errorf("RemoveFragment = %d, want %d", n, len(ts))
	}
	if g.Len() != len(other) {
		t.Errorf("left %d triples, want %d", g.Len(), len(other))
	}
}

func TestClosure(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		r    Term
		want string // the expected fragment, N-Triples
	}{
		{"cycle of blank nodes", `
<http://ex/r> <http://ex/p> _:a .
_:a <http://ex/p> _:b .
_:b <http://ex/p> _:a .
_:b <http://ex/q> "x" .
_:c <http://ex/p> _:a .
`, IRI("http://ex/r"), `
<http://ex/r> <http://ex/p> _:a .
_:a <http://ex/p> _:b .
_:b <http://ex/p> _:a .
_:b <http://ex/q> "x" .
`},
		{"stops at an IRI object", `
<http://ex/r> <http://ex/p> <http://ex/x> .
<http://ex/x> <http://ex/p> _:x .
_:x <http://ex/p> "no" .
`, IRI("http://ex/r"), `<http://ex/r> <http://ex/p> <http://ex/x> .`},
		{"blank node reached twice", `
<http://ex/r> <http://ex/p> _:a .
<http://ex/r> <http://ex/q> _:a .
_:a <http://ex/p> "once" .
`, IRI("http://ex/r"), `
<http://ex/r> <http://ex/p> _:a .
<http://ex/r> <http://ex/q> _:a .
_:a <http://ex/p> "once" .
`},
		{"self loop on a blank resource", `
_:r <http://ex/p> _:r .
_:r <http://ex/q> _:s .
_:s <http://ex/p> _:r .
`, Blank("r"), `
_:r <http://ex/p> _:r .
_:r <http://ex/q> _:s .
_:s <http://ex/p> _:r .
`},
		{"unknown resource", `<http://ex/a> <http://ex/p> "x" .`, IRI("http://ex/r"), ``},
		{"literal object not followed", `<http://ex/r> <http://ex/p> "_:a" .
_:a <http://ex/p> "no" .`, IRI("http://ex/r"), `<http://ex/r> <http://ex/p> "_:a" .`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGraph()
			for _, tr := range mustParse(t, tc.doc) {
				g.Add(tr)
			}
			got := g.Fragment(tc.r)
			want := mustParse(t, tc.want)
			if !slices.Equal(ntSet(got), ntSet(want)) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(ntSet(got), "\n"), strings.Join(ntSet(want), "\n"))
			}
		})
	}
}

func TestClosureIndexError(t *testing.T) {
	g := NewGraph()
	for _, tr := range mustParse(t, "<http://ex/r> <http://ex/p> _:a .\n_:a <http://ex/p> \"x\" .") {
		g.Add(tr)
	}
	calls := 0
	_, err := Closure(IRI("http://ex/r"), func(s Term) ([]Triple, error) {
		calls++
		if s.IsBlank() {
			return nil, errBoom
		}
		return g.BySubject(s), nil
	})
	if !errors.Is(err, errBoom) || calls != 2 {
		t.Fatalf("got %v after %d calls", err, calls)
	}
}
