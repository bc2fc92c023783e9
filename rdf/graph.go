package rdf

import "iter"

// Graph is an in-memory set of triples indexed by subject: what a
// fragment (SD-SRV-26) needs. It is not safe for concurrent use; callers
// that share one guard it with their own lock.
type Graph struct {
	// at maps each triple to its index in bySubj[t.S], so that Remove is
	// O(1): the last triple of the subject's list moves into the hole.
	at     map[Triple]int
	bySubj map[Term][]Triple
}

// NewGraph returns an empty Graph.
func NewGraph() *Graph {
	return &Graph{at: make(map[Triple]int), bySubj: make(map[Term][]Triple)}
}

// Add adds t and reports whether it was not yet present.
func (g *Graph) Add(t Triple) bool {
	if _, ok := g.at[t]; ok {
		return false
	}
	list := g.bySubj[t.S]
	g.at[t] = len(list)
	g.bySubj[t.S] = append(list, t)
	return true
}

// Remove removes t and reports whether it was present.
func (g *Graph) Remove(t Triple) bool {
	i, ok := g.at[t]
	if !ok {
		return false
	}
	delete(g.at, t)
	list := g.bySubj[t.S]
	last := len(list) - 1
	if i != last {
		list[i] = list[last]
		g.at[list[i]] = i
	}
	list[last] = Triple{}
	if last == 0 {
		delete(g.bySubj, t.S)
	} else {
		g.bySubj[t.S] = list[:last]
	}
	return true
}

// Has reports whether t is in g.
func (g *Graph) Has(t Triple) bool {
	_, ok := g.at[t]
	return ok
}

// Len returns the number of triples in g.
func (g *Graph) Len() int { return len(g.at) }

// BySubject returns a copy of the triples whose subject is s, in no
// particular order (Remove reorders them).
func (g *Graph) BySubject(s Term) []Triple {
	list := g.bySubj[s]
	if len(list) == 0 {
		return nil
	}
	return append([]Triple(nil), list...)
}

// Subjects yields every subject of g once, in no particular order. g must
// not be changed during the iteration.
func (g *Graph) Subjects() iter.Seq[Term] {
	return func(yield func(Term) bool) {
		for s := range g.bySubj {
			if !yield(s) {
				return
			}
		}
	}
}

// All yields every triple of g once, grouped by subject. g must not be
// changed during the iteration.
func (g *Graph) All() iter.Seq[Triple] {
	return func(yield func(Triple) bool) {
		for _, list := range g.bySubj {
			for _, t := range list {
				if !yield(t) {
					return
				}
			}
		}
	}
}

// Fragment returns r's SDShare fragment in g: r's statements and the
// blank-node closure below them (see Closure).
func (g *Graph) Fragment(r Term) []Triple {
	ts, _ := Closure(r, func(s Term) ([]Triple, error) { return g.bySubj[s], nil })
	return ts
}

// RemoveFragment removes r's fragment from g (the delete half of the
// client's fragment update, SD-CLI-12) and returns how many triples went.
func (g *Graph) RemoveFragment(r Term) int {
	n := 0
	for _, t := range g.Fragment(r) {
		if g.Remove(t) {
			n++
		}
	}
	return n
}
