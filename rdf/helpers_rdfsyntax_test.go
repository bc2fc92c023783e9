package rdf

import (
	"cmp"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"testing"
)

// collectSeq reads all triples; on error it returns those before it.
func collectSeq(seq iter.Seq2[Triple, error]) ([]Triple, error) {
	var ts []Triple
	for t, err := range seq {
		if err != nil {
			return ts, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

func mustTurtle(t testing.TB, doc, base string) []Triple {
	t.Helper()
	ts, err := collectSeq(parseTurtle(strings.NewReader(doc), base))
	if err != nil {
		t.Fatalf("parse turtle: %v\n%s", err, doc)
	}
	return ts
}

// termKey orders terms for sorting (not an RDF syntax).
func termKey(x Term) string {
	return fmt.Sprintf("%d\x00%s\x00%s\x00%s", x.Kind, x.Value, x.Lang, x.Datatype)
}

func cmpTriple(a, b Triple) int {
	return cmp.Or(strings.Compare(termKey(a.S), termKey(b.S)),
		strings.Compare(termKey(a.P), termKey(b.P)),
		strings.Compare(termKey(a.O), termKey(b.O)))
}

// sameGraph reports whether a and b are the same set of triples up to a
// renaming of blank nodes (a small backtracking search; test graphs are
// small). rdfcore's Isomorphic will replace it once merged.
func sameGraph(a, b []Triple) bool {
	a, b = dedup(a), dedup(b)
	if len(a) != len(b) {
		return false
	}
	var an, bn []string
	seen := map[string]bool{}
	for _, t := range a {
		for _, x := range []Term{t.S, t.O} {
			if x.IsBlank() && !seen["a"+x.Value] {
				seen["a"+x.Value] = true
				an = append(an, x.Value)
			}
		}
	}
	for _, t := range b {
		for _, x := range []Term{t.S, t.O} {
			if x.IsBlank() && !seen["b"+x.Value] {
				seen["b"+x.Value] = true
				bn = append(bn, x.Value)
			}
		}
	}
	if len(an) != len(bn) {
		return false
	}
	// signature: the non-blank parts of the triples a node occurs in
	sig := func(ts []Triple, n string) string {
		var parts []string
		for _, t := range ts {
			f := func(x Term) string {
				if x.IsBlank() {
					if x.Value == n {
						return "SELF"
					}
					return "B"
				}
				return termKey(x)
			}
			if (t.S.IsBlank() && t.S.Value == n) || (t.O.IsBlank() && t.O.Value == n) {
				parts = append(parts, f(t.S)+"|"+f(t.P)+"|"+f(t.O))
			}
		}
		slices.Sort(parts)
		return strings.Join(parts, "\n")
	}
	asig, bsig := map[string]string{}, map[string]string{}
	for _, n := range an {
		asig[n] = sig(a, n)
	}
	for _, n := range bn {
		bsig[n] = sig(b, n)
	}
	bset := map[Triple]bool{}
	for _, t := range b {
		bset[t] = true
	}
	m, used := map[string]string{}, map[string]bool{}
	mapT := func(x Term) Term {
		if x.IsBlank() {
			return Blank(m[x.Value])
		}
		return x
	}
	var try func(i int) bool
	try = func(i int) bool {
		if i == len(an) {
			for _, t := range a {
				if !bset[Triple{mapT(t.S), t.P, mapT(t.O)}] {
					return false
				}
			}
			return true
		}
		for _, c := range bn {
			if used[c] || asig[an[i]] != bsig[c] {
				continue
			}
			m[an[i]], used[c] = c, true
			if try(i + 1) {
				return true
			}
			used[c] = false
		}
		return false
	}
	return try(0)
}

func dedup(ts []Triple) []Triple {
	ts = slices.Clone(ts)
	slices.SortFunc(ts, cmpTriple)
	return slices.Compact(ts)
}

func dump(ts []Triple) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "%v %v %v\n", t.S, t.P, t.O)
	}
	return b.String()
}

// roundTrip writes ts with w and reads them back with parse.
func roundTrip(t testing.TB, ts []Triple, newW func(io.Writer) Writer, parse func(io.Reader, string) iter.Seq2[Triple, error]) ([]Triple, string) {
	t.Helper()
	var buf strings.Builder
	w := newW(&buf)
	for _, tr := range ts {
		if err := w.Write(tr); err != nil {
			t.Fatalf("write %v: %v", tr, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	back, err := collectSeq(parse(strings.NewReader(buf.String()), ""))
	if err != nil {
		t.Fatalf("re-parse: %v\n%s", err, buf.String())
	}
	return back, buf.String()
}
