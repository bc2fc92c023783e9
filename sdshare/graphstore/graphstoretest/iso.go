package graphstoretest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// Isomorphic reports whether the triple sets a and b are equal up to a
// renaming of blank nodes (duplicates are ignored). It refines blank node
// colours by their neighbourhoods and then searches for a bijection, which
// is exact and fast enough for test-sized graphs.
func Isomorphic(a, b []rdf.Triple) bool {
	sa, sb := toSet(a), toSet(b)
	if len(sa) != len(sb) {
		return false
	}
	ca, cb := colours(sa), colours(sb)
	if len(ca) != len(cb) {
		return false
	}
	// Ground triples must agree exactly.
	for t := range sa {
		if !t.S.IsBlank() && !t.O.IsBlank() {
			if _, ok := sb[t]; !ok {
				return false
			}
		}
	}
	// Colour histograms must agree.
	hist := func(c map[rdf.Term]string) map[string]int {
		h := map[string]int{}
		for _, v := range c {
			h[v]++
		}
		return h
	}
	ha, hb := hist(ca), hist(cb)
	if len(ha) != len(hb) {
		return false
	}
	for k, v := range ha {
		if hb[k] != v {
			return false
		}
	}
	nodes := make([]rdf.Term, 0, len(ca))
	for n := range ca {
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, func(x, y rdf.Term) int { return strings.Compare(ca[x], ca[y]) })
	m := map[rdf.Term]rdf.Term{}
	used := map[rdf.Term]bool{}
	byNode := map[rdf.Term][]rdf.Triple{}
	for t := range sa {
		if t.S.IsBlank() {
			byNode[t.S] = append(byNode[t.S], t)
		}
		if t.O.IsBlank() && t.O != t.S {
			byNode[t.O] = append(byNode[t.O], t)
		}
	}
	mapTerm := func(x rdf.Term) (rdf.Term, bool) {
		if !x.IsBlank() {
			return x, true
		}
		y, ok := m[x]
		return y, ok
	}
	// consistent checks the triples touching n whose blank nodes are all
	// mapped.
	consistent := func(n rdf.Term) bool {
		for _, t := range byNode[n] {
			s, ok1 := mapTerm(t.S)
			o, ok2 := mapTerm(t.O)
			if ok1 && ok2 {
				if _, ok := sb[rdf.Triple{S: s, P: t.P, O: o}]; !ok {
					return false
				}
			}
		}
		return true
	}
	var search func(i int) bool
	search = func(i int) bool {
		if i == len(nodes) {
			return true
		}
		n := nodes[i]
		for c, col := range cb {
			if used[c] || col != ca[n] {
				continue
			}
			m[n], used[c] = c, true
			if consistent(n) && search(i+1) {
				return true
			}
			delete(m, n)
			used[c] = false
		}
		return false
	}
	return search(0)
}

func toSet(ts []rdf.Triple) map[rdf.Triple]struct{} {
	s := make(map[rdf.Triple]struct{}, len(ts))
	for _, t := range ts {
		s[t] = struct{}{}
	}
	return s
}

// colours returns a refined colour for every blank node of s: its
// neighbourhood (predicates, ground neighbours, neighbours' colours),
// iterated until the number of colours stops growing.
func colours(s map[rdf.Triple]struct{}) map[rdf.Term]string {
	c := map[rdf.Term]string{}
	for t := range s {
		if t.S.IsBlank() {
			c[t.S] = ""
		}
		if t.O.IsBlank() {
			c[t.O] = ""
		}
	}
	key := func(x rdf.Term) string {
		if x.IsBlank() {
			return "_:" + c[x]
		}
		return fmt.Sprintf("%d|%s|%s|%s", x.Kind, x.Value, x.Lang, x.Datatype)
	}
	distinct := 1
	for range len(c) + 1 {
		sigs := map[rdf.Term][]string{}
		for t := range s {
			if t.S.IsBlank() {
				self := ""
				if t.O == t.S {
					self = "self"
				}
				sigs[t.S] = append(sigs[t.S], "out|"+t.P.Value+"|"+key(t.O)+self)
			}
			if t.O.IsBlank() && t.O != t.S {
				sigs[t.O] = append(sigs[t.O], "in|"+t.P.Value+"|"+key(t.S))
			}
		}
		next := map[rdf.Term]string{}
		seen := map[string]bool{}
		for n := range c {
			sig := sigs[n]
			slices.Sort(sig)
			next[n] = fmt.Sprintf("%x", strings.Join(sig, "\n"))
			if len(next[n]) > 64 {
				next[n] = hash(next[n])
			}
			seen[next[n]] = true
		}
		c = next
		if len(seen) == distinct {
			break
		}
		distinct = len(seen)
	}
	return c
}

// hash shortens a colour; collisions only cost search time, not
// correctness, since the search checks every triple.
func hash(s string) string {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return fmt.Sprintf("%016x", h)
}
