package rdf

import (
	"bytes"
	"cmp"
	"container/heap"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Blank-node-aware comparison. Two graphs are isomorphic when a renaming
// of blank nodes turns one into the other. Both Canonical and Isomorphic
// colour the blank nodes by iterated refinement (a node's colour is a hash
// of its colour and the multiset of (role, predicate, colour or term of
// the other end) of its triples, repeated until the partition into colours
// is stable), then individualise one node of a tied colour class and
// refine again, until every blank node has its own colour.
//
// Canonical individualises each tied class's nodes in turn and keeps the
// labelling whose sorted lines are smallest, which is independent of the
// input's labels and order. That search is bounded; past the bound (large
// graphs with ties) it takes one node of each tied class, the one with the
// smallest label, and never backtracks. When the tied nodes are
// interchangeable (an automorphism maps one to the other, as for repeated
// identical blank structures, a blank cycle, a resource's two identical
// addresses) that choice does not matter. It does when refinement ties
// nodes that are not interchangeable (blank cycles of different lengths,
// regular structures made only of blank nodes): there, past the bound,
// isomorphic inputs with different labels may get different canonical
// forms; inputs that differ only in triple order or duplicates still get
// the same one. Non-isomorphic inputs never get the same canonical form,
// since it is a relabelling of the input.
//
// Isomorphic is exact: it searches the candidates of each tied class with
// backtracking and checks the final mapping triple by triple. Its worst
// case is exponential (on the same pathological regular graphs), but
// refinement makes the usual graphs linear-ish: no backtracking happens
// when the ties are interchangeable.

// h16 is a colour or hash: 16 bytes of SHA-256, deterministic across
// processes (Hash must be) and wide enough that collisions do not matter.
type h16 [16]byte

func hashBytes(b []byte) h16 {
	s := sha256.Sum256(b)
	return h16(s[:16])
}

// edge is one triple seen from a blank node: its role (subject, object or
// both), the predicate's hash and the other end (a blank node's index, or
// -1 and the hash of a ground term).
type edge struct {
	role   byte
	pred   h16
	other  int32
	ground h16
}

type class struct {
	colour  h16
	sig     h16 // the signature every member has at a stable point
	members []int32
}

// refiner holds one graph's blank nodes and their colour classes.
type refiner struct {
	edges    [][]edge // shared by clones: never changed after build
	colour   []h16
	sig      []h16
	cls      []int32 // node -> class index
	pos      []int32 // node -> index in its class's members
	classes  []class
	byColour map[h16]int32
	heap     classHeap
	touched  []int32 // classes created or resized by the current operation

	mark  []uint32 // per node, epoch marks for deduplication
	epoch uint32
	buf   []byte
	ehs   []h16

	// steps, when not nil, is the work left to CanonicalBounded, shared
	// by clones: each signature costs its node's edges plus one, each
	// clone its nodes. Refinement stops when it runs out.
	steps *int64
}

// spend takes n steps from r's budget and reports whether some are left.
func (r *refiner) spend(n int) bool {
	if r.steps == nil {
		return true
	}
	*r.steps -= int64(n)
	return *r.steps >= 0
}

// exhausted reports whether r's budget has run out.
func (r *refiner) exhausted() bool { return r.steps != nil && *r.steps < 0 }

// bgraph is a deduplicated triple set with its blank nodes indexed.
type bgraph struct {
	triples []Triple
	set     map[Triple]struct{}
	labels  []string         // blank node index -> label, sorted
	index   map[string]int32 // label -> index
	ground  map[Term]h16
}

func dedupe(ts []Triple) []Triple {
	out, _ := dedupeSet(ts)
	return out
}

func dedupeSet(ts []Triple) ([]Triple, map[Triple]struct{}) {
	seen := make(map[Triple]struct{}, len(ts))
	out := make([]Triple, 0, len(ts))
	for _, t := range ts {
		if _, ok := seen[t]; !ok {
			seen[t] = struct{}{}
			out = append(out, t)
		}
	}
	return out, seen
}

func newBGraph(ts []Triple) *bgraph {
	g := &bgraph{index: make(map[string]int32), ground: make(map[Term]h16)}
	g.triples, g.set = dedupeSet(ts)
	for _, t := range g.triples {
		for _, x := range [2]Term{t.S, t.O} {
			if x.Kind == KindBlank {
				if _, ok := g.index[x.Value]; !ok {
					g.index[x.Value] = 0
					g.labels = append(g.labels, x.Value)
				}
			}
		}
	}
	// Indices follow label order, so Canonical's choices do not depend on
	// the order of the input triples.
	slices.Sort(g.labels)
	for i, l := range g.labels {
		g.index[l] = int32(i)
	}
	return g
}

func (g *bgraph) termHash(t Term) h16 {
	if h, ok := g.ground[t]; ok {
		return h
	}
	h := hashBytes(appendTerm([]byte{byte(t.Kind)}, t))
	g.ground[t] = h
	return h
}

func (g *bgraph) refiner() *refiner { return g.refinerBounded(nil) }

// refinerBounded is refiner with a work budget (nil: none); when it runs
// out, refinement stops early and exhausted says so.
func (g *bgraph) refinerBounded(steps *int64) *refiner {
	n := len(g.labels)
	r := &refiner{
		steps:    steps,
		edges:    make([][]edge, n),
		colour:   make([]h16, n),
		sig:      make([]h16, n),
		cls:      make([]int32, n),
		pos:      make([]int32, n),
		byColour: make(map[h16]int32),
		mark:     make([]uint32, n),
	}
	for _, t := range g.triples {
		p := g.termHash(t.P)
		switch {
		case t.S.Kind == KindBlank && t.O == t.S:
			i := g.index[t.S.Value]
			r.edges[i] = append(r.edges[i], edge{role: 'l', pred: p, other: -1})
		case t.S.Kind == KindBlank && t.O.Kind == KindBlank:
			i, j := g.index[t.S.Value], g.index[t.O.Value]
			r.edges[i] = append(r.edges[i], edge{role: 's', pred: p, other: j})
			r.edges[j] = append(r.edges[j], edge{role: 'o', pred: p, other: i})
		case t.S.Kind == KindBlank:
			i := g.index[t.S.Value]
			r.edges[i] = append(r.edges[i], edge{role: 's', pred: p, other: -1, ground: g.termHash(t.O)})
		case t.O.Kind == KindBlank:
			j := g.index[t.O.Value]
			r.edges[j] = append(r.edges[j], edge{role: 'o', pred: p, other: -1, ground: g.termHash(t.S)})
		}
	}
	if n == 0 || !r.spend(len(g.triples)+n) {
		return r
	}
	all := make([]int32, n)
	start := hashBytes([]byte("rdf blank node"))
	for i := range all {
		all[i] = int32(i)
		r.colour[i] = start
		r.pos[i] = int32(i)
	}
	r.classes = make([]class, 1, n)
	r.classes[0] = class{colour: start, members: slices.Clone(all)}
	r.byColour[start] = 0
	r.pushClass(0)
	// The first round computes every node's signature; the start class's
	// sig is the zero h16, which no real signature equals.
	r.refine(all)
	return r
}

// clone copies the mutable state (edges are shared).
func (r *refiner) clone() *refiner {
	c := *r
	c.colour = slices.Clone(r.colour)
	c.sig = slices.Clone(r.sig)
	c.cls = slices.Clone(r.cls)
	c.pos = slices.Clone(r.pos)
	c.classes = slices.Clone(r.classes)
	for i := range c.classes {
		c.classes[i].members = slices.Clone(c.classes[i].members)
	}
	c.byColour = make(map[h16]int32, len(r.byColour))
	for k, v := range r.byColour {
		c.byColour[k] = v
	}
	c.heap = slices.Clone(r.heap)
	c.touched = nil
	c.mark = make([]uint32, len(r.mark))
	c.epoch = 0
	c.buf, c.ehs = nil, nil
	c.spend(len(r.colour))
	return &c
}

// signature hashes node i's colour-independent neighbourhood under the
// current colours.
func (r *refiner) signature(i int32) h16 {
	ehs := r.ehs[:0]
	for _, e := range r.edges[i] {
		b := append(r.buf[:0], e.role)
		b = append(b, e.pred[:]...)
		if e.other >= 0 {
			b = append(b, r.colour[e.other][:]...)
		} else {
			b = append(b, e.ground[:]...)
		}
		r.buf = b
		ehs = append(ehs, hashBytes(b))
	}
	slices.SortFunc(ehs, func(a, b h16) int { return bytes.Compare(a[:], b[:]) })
	b := r.buf[:0]
	for _, h := range ehs {
		b = append(b, h[:]...)
	}
	r.buf, r.ehs = b, ehs
	return hashBytes(b)
}

// newColour derives a fresh colour from a class colour, a salt and the
// class's size (a class keeps its colour while members leave it, so the
// size keeps repeated steps on one class from deriving the same colour),
// re-hashing on the (astronomically unlikely) clash with a live colour so
// that colours always name one class.
func (r *refiner) newColour(base h16, salt h16, size int) h16 {
	b := append(append([]byte{'n'}, base[:]...), salt[:]...)
	c := hashBytes(strconv.AppendInt(b, int64(size), 10))
	for {
		if _, ok := r.byColour[c]; !ok {
			return c
		}
		c = hashBytes(append([]byte{'r'}, c[:]...))
	}
}

func (r *refiner) newClass(colour, sig h16) int32 {
	ci := int32(len(r.classes))
	r.classes = append(r.classes, class{colour: colour, sig: sig})
	r.byColour[colour] = ci
	r.touched = append(r.touched, ci)
	return ci
}

// move puts node m into class ci and collects its blank neighbours.
func (r *refiner) move(m, ci int32, next []int32) []int32 {
	from := &r.classes[r.cls[m]]
	last := from.members[len(from.members)-1]
	p := r.pos[m]
	from.members[p] = last
	r.pos[last] = p
	from.members = from.members[:len(from.members)-1]
	to := &r.classes[ci]
	r.pos[m] = int32(len(to.members))
	to.members = append(to.members, m)
	r.cls[m] = ci
	r.colour[m] = to.colour
	for _, e := range r.edges[m] {
		if e.other >= 0 {
			next = append(next, e.other)
		}
	}
	return next
}

type dirtyNode struct {
	node, cls int32
	sig       h16
}

// refine splits classes until the partition is stable, starting from the
// nodes whose neighbours changed colour. Only the part of a split class
// that is not the largest changes colour (ties: the smallest signature
// stays), so a long chain of blank nodes costs work near the changes, not
// the whole graph per round.
func (r *refiner) refine(dirty []int32) {
	var ds []dirtyNode
	for len(dirty) > 0 && !r.exhausted() {
		r.epoch++
		ds = ds[:0]
		for _, d := range dirty {
			if r.mark[d] != r.epoch {
				r.mark[d] = r.epoch
				ds = append(ds, dirtyNode{node: d, cls: r.cls[d]})
			}
		}
		// Signatures use the colours from before this round's splits.
		for i := range ds {
			if !r.spend(len(r.edges[ds[i].node]) + 1) {
				return
			}
			ds[i].sig = r.signature(ds[i].node)
		}
		slices.SortFunc(ds, func(a, b dirtyNode) int {
			if c := cmp.Compare(a.cls, b.cls); c != 0 {
				return c
			}
			return bytes.Compare(a.sig[:], b.sig[:])
		})
		var next []int32
		for start := 0; start < len(ds); {
			end := start
			for end < len(ds) && ds[end].cls == ds[start].cls {
				end++
			}
			next = r.split(ds[start].cls, ds[start:end], next)
			start = end
		}
		dirty = next
	}
}

type part struct {
	sig   h16
	nodes []int32 // nil for the unchanged part
	size  int
}

// split splits class ci by the new signatures of its dirty members ds
// (sorted by signature); the other members keep the class signature.
func (r *refiner) split(ci int32, ds []dirtyNode, next []int32) []int32 {
	c := &r.classes[ci]
	oldSig := c.sig
	size := len(c.members) // before the split: the same in isomorphic graphs
	unchanged := size
	var parts []part
	for i := 0; i < len(ds); {
		j := i
		for j < len(ds) && ds[j].sig == ds[i].sig {
			j++
		}
		if ds[i].sig != oldSig {
			nodes := make([]int32, 0, j-i)
			for _, d := range ds[i:j] {
				nodes = append(nodes, d.node)
			}
			parts = append(parts, part{sig: ds[i].sig, nodes: nodes, size: j - i})
			unchanged -= j - i
		}
		i = j
	}
	if len(parts) == 0 {
		return next
	}
	if unchanged == 0 && len(parts) == 1 {
		c.sig = parts[0].sig // all moved together: no split
		return next
	}
	if unchanged > 0 {
		parts = append(parts, part{sig: oldSig, size: unchanged})
	}
	var created []int32
	keep := 0
	for i, p := range parts[1:] {
		k := parts[keep]
		if p.size > k.size || p.size == k.size && bytes.Compare(p.sig[:], k.sig[:]) < 0 {
			keep = i + 1
		}
	}
	if parts[keep].nodes == nil {
		// The unchanged members stay; the others leave.
		for i, p := range parts {
			if i == keep {
				continue
			}
			nc := r.newClass(r.newColour(c.colour, p.sig, size), p.sig)
			created = append(created, nc)
			for _, m := range p.nodes {
				next = r.move(m, nc, next)
			}
			c = &r.classes[ci]
		}
	} else {
		// A changed part stays; the unchanged members (fewer) leave too.
		moved := make(map[int32]bool)
		for _, p := range parts {
			for _, m := range p.nodes {
				moved[m] = true
			}
		}
		var stay []int32
		for _, m := range c.members {
			if !moved[m] {
				stay = append(stay, m)
			}
		}
		for i, p := range parts {
			if i == keep {
				continue
			}
			nodes := p.nodes
			if nodes == nil {
				nodes = stay
			}
			nc := r.newClass(r.newColour(c.colour, p.sig, size), p.sig)
			created = append(created, nc)
			for _, m := range nodes {
				next = r.move(m, nc, next)
			}
			c = &r.classes[ci]
		}
		c.sig = parts[keep].sig
	}
	r.touched = append(r.touched, ci)
	r.pushClass(ci)
	for _, nc := range created {
		r.pushClass(nc)
	}
	return next
}

var individualSalt = hashBytes([]byte("individual"))

// individualise gives node x a colour of its own, derived from its class
// colour alone (so that the same step in another graph gives the same
// colour), and refines.
func (r *refiner) individualise(x int32) {
	ci := r.cls[x]
	c := r.classes[ci]
	nc := r.newClass(r.newColour(c.colour, individualSalt, len(c.members)), c.sig)
	next := r.move(x, nc, nil)
	r.touched = append(r.touched, ci)
	r.pushClass(nc)
	r.pushClass(ci)
	r.refine(next)
}

func (r *refiner) pushClass(ci int32) {
	c := &r.classes[ci]
	if len(c.members) > 1 {
		heap.Push(&r.heap, heapEntry{size: len(c.members), colour: c.colour, cls: ci})
	}
}

// popTied returns the tied class with the fewest members (ties: smallest
// colour), or -1 when every node has its own colour.
func (r *refiner) popTied() int32 {
	for r.heap.Len() > 0 {
		e := heap.Pop(&r.heap).(heapEntry)
		c := &r.classes[e.cls]
		if c.colour == e.colour && len(c.members) == e.size && e.size > 1 {
			return e.cls
		}
	}
	return -1
}

// minMember returns the member of class ci with the smallest index (the
// smallest label).
func (r *refiner) minMember(ci int32) int32 {
	return slices.Min(r.classes[ci].members)
}

type heapEntry struct {
	size   int
	colour h16
	cls    int32
}

type classHeap []heapEntry

func (h classHeap) Len() int { return len(h) }
func (h classHeap) Less(i, j int) bool {
	if h[i].size != h[j].size {
		return h[i].size < h[j].size
	}
	return bytes.Compare(h[i].colour[:], h[j].colour[:]) < 0
}
func (h classHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *classHeap) Push(x any)   { *h = append(*h, x.(heapEntry)) }
func (h *classHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// Canonical returns ts without duplicates, with blank nodes relabelled
// _:c0, _:c1, … by their refined colours and sorted by N-Triples text. See
// the comment at the top of canon.go for when isomorphic inputs can still
// differ.
func Canonical(ts []Triple) []Triple {
	out, _ := canonical(ts)
	return out
}

// CanonicalNTriples is Canonical with the canonical form's N-Triples
// document (each line and "\n": the bytes Hash hashes), from the lines
// the labelling wrote already: a server answering a fragment per request
// spent a third of its labelling writing them again.
func CanonicalNTriples(ts []Triple) ([]Triple, []byte) {
	out, lines := canonical(ts)
	n := 0
	for _, l := range lines {
		n += len(l) + 1
	}
	b := make([]byte, 0, n)
	for _, l := range lines {
		b = append(b, l...)
		b = append(b, '\n')
	}
	return out, b
}

// ErrCanonicalBudget is CanonicalBounded's error when labelling the blank
// nodes takes more steps than it allows.
var ErrCanonicalBudget = errors.New("rdf: canonical labelling exceeds its work budget")

// CanonicalBounded is Canonical with a bound on the work of labelling the
// blank nodes: steps counts each blank node's edges every time its colour
// is recomputed, plus the nodes of each copy of the search state, plus
// the triples of each labelling written (every line, sorted). It
// returns the steps used; past steps it stops and returns
// ErrCanonicalBudget. The count depends only
// on the input (its triples, in the order given), never on the machine or
// its load, so the same input is always within the budget or always
// beyond it. Canonical's work grows about linearly with the blank nodes
// for the usual graphs (chains, trees, cycles: some tens of steps per
// node) but can grow much faster on regular structures made only of blank
// nodes. Graphs without blank nodes cost no steps.
func CanonicalBounded(ts []Triple, steps int64) (out []Triple, used int64, err error) {
	left := steps
	out, _, err = canonicalBounded(ts, &left)
	return out, steps - left, err
}

// canonical returns the canonical triples and their N-Triples lines.
//
// When refinement leaves a tied class, the labelling depends on which of
// its nodes is individualised first unless they are interchangeable (two
// blank cycles of different lengths are tied but not interchangeable). So
// canonical first tries every choice, recursively, and keeps the labelling
// whose sorted lines are smallest: that does not depend on the input's
// labels or order. The search is bounded (canonLeaves labellings, and
// canonWork lines written or nodes cloned in all), so a large graph with
// ties gets little or no search; past the bound it falls back to choosing the
// node with the smallest label, as described at the top of canon.go.
func canonical(ts []Triple) ([]Triple, []string) {
	out, lines, _ := canonicalBounded(ts, nil)
	return out, lines
}

// canonicalBounded is canonical with a work budget (nil: none; see
// CanonicalBounded).
func canonicalBounded(ts []Triple, steps *int64) ([]Triple, []string, error) {
	g := newBGraph(ts)
	if len(g.labels) == 0 {
		out, lines := sortedLines(g.triples)
		return out, lines, nil
	}
	b := &canonBudget{leaves: canonLeaves, work: canonWork, per: len(g.triples) + 1}
	if out, lines, ok := g.search(g.refinerBounded(steps), b); ok {
		return out, lines, nil
	}
	r := g.refinerBounded(steps)
	for !r.exhausted() {
		ci := r.popTied()
		if ci < 0 {
			break
		}
		r.touched = r.touched[:0]
		r.individualise(r.minMember(ci))
	}
	if r.exhausted() || !r.spend(len(g.triples)) {
		return nil, nil, ErrCanonicalBudget
	}
	out, lines := g.labelled(r)
	return out, lines, nil
}

// Bounds of canonical's search over individualisation choices.
const (
	canonLeaves = 512
	canonWork   = 1 << 18
)

type canonBudget struct{ leaves, work, per int }

// search returns the smallest labelling over every sequence of choices
// from r on, or ok false when that would exceed b.
func (g *bgraph) search(r *refiner, b *canonBudget) (out []Triple, lines []string, ok bool) {
	if r.exhausted() {
		return nil, nil, false // the caller sees it too
	}
	ci := r.popTied()
	if ci < 0 {
		b.leaves--
		b.work -= b.per
		if b.leaves < 0 || b.work < 0 {
			return nil, nil, false
		}
		// A labelling writes and sorts every triple's line: steps too,
		// or many ground triples beside a few tied blank nodes cost
		// far more than the steps said.
		if !r.spend(len(g.triples)) {
			return nil, nil, false
		}
		out, lines = g.labelled(r)
		return out, lines, true
	}
	members := slices.Clone(r.classes[ci].members)
	if len(members) > b.leaves || len(members)*b.per > b.work {
		return nil, nil, false // cannot finish: give up before any work
	}
	for _, x := range members {
		// A clone and its refinement cost about as much as a leaf.
		if b.work -= b.per; b.work < 0 {
			return nil, nil, false
		}
		rc := r.clone()
		rc.individualise(x)
		o, l, ok := g.search(rc, b)
		if !ok {
			return nil, nil, false
		}
		if lines == nil || slices.Compare(l, lines) < 0 {
			out, lines = o, l
		}
	}
	return out, lines, true
}

// labelled numbers the blank nodes in the order of r's colours (every node
// has its own colour) and returns the relabelled triples, sorted, with
// their lines.
func (g *bgraph) labelled(r *refiner) ([]Triple, []string) {
	order := make([]int32, len(g.labels))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return bytes.Compare(r.colour[a][:], r.colour[b][:]) })
	label := make(map[string]string, len(order))
	for k, i := range order {
		label[g.labels[i]] = "c" + strconv.Itoa(k)
	}
	rename := func(t Term) Term {
		if t.Kind == KindBlank {
			t.Value = label[t.Value]
		}
		return t
	}
	out := make([]Triple, len(g.triples))
	for i, t := range g.triples {
		out[i] = Triple{rename(t.S), t.P, rename(t.O)}
	}
	return sortedLines(out)
}

// sortedLines sorts ts by N-Triples text and returns them with their
// lines.
func sortedLines(ts []Triple) ([]Triple, []string) {
	keys := make([]string, len(ts))
	idx := make([]int, len(ts))
	for i, t := range ts {
		keys[i] = tripleString(t)
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	sorted := make([]Triple, len(ts))
	lines := make([]string, len(ts))
	for k, i := range idx {
		sorted[k], lines[k] = ts[i], keys[i]
	}
	return sorted, lines
}

// String returns t as one N-Triples line without the newline:
// "<s> <p> <o> .".
func (t Triple) String() string { return tripleString(t) }

// tripleString is t as one N-Triples line without the newline.
func tripleString(t Triple) string {
	b := appendTerm(nil, t.S)
	b = append(b, ' ')
	b = appendTerm(b, t.P)
	b = append(b, ' ')
	b = appendTerm(b, t.O)
	b = append(b, ' ', '.')
	return string(b)
}

// Hash returns the SHA-256 of the canonical N-Triples of ts (each triple a
// line ending in "\n"). Graphs that are not isomorphic never share a Hash;
// isomorphic ones do but for the corner cases described at the top of
// canon.go.
func Hash(ts []Triple) [32]byte {
	h := sha256.New()
	_, lines := canonical(ts)
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// Isomorphic reports whether a and b are the same graph up to blank node
// renaming (duplicates ignored). It is exact: a true answer is checked
// triple by triple, and a false one comes from an exhaustive search.
func Isomorphic(a, b []Triple) bool {
	return isomorphicReason(a, b) == ""
}

// IsomorphicDiff returns "" when a and b are isomorphic, else a short
// reason for a test failure: the triple counts, some ground triples found
// in only one of them, or the blank node structure.
func IsomorphicDiff(a, b []Triple) string {
	return isomorphicReason(a, b)
}

func isomorphicReason(a, b []Triple) string {
	ga, gb := newBGraph(a), newBGraph(b)
	var why []string
	if len(ga.triples) != len(gb.triples) {
		why = append(why, fmt.Sprintf("a has %d triples, b has %d", len(ga.triples), len(gb.triples)))
	}
	onlyA, nbA := groundDiff(ga.triples, gb.set)
	onlyB, nbB := groundDiff(gb.triples, ga.set)
	if len(onlyA) > 0 {
		why = append(why, fmt.Sprintf("%d ground triples only in a, e.g. %s", len(onlyA), strings.Join(firstN(onlyA, 3), " | ")))
	}
	if len(onlyB) > 0 {
		why = append(why, fmt.Sprintf("%d ground triples only in b, e.g. %s", len(onlyB), strings.Join(firstN(onlyB, 3), " | ")))
	}
	if len(why) > 0 {
		return strings.Join(why, "; ")
	}
	if len(ga.labels) != len(gb.labels) || nbA != nbB {
		return fmt.Sprintf("same ground triples, but a has %d blank nodes in %d triples, b has %d in %d",
			len(ga.labels), nbA, len(gb.labels), nbB)
	}
	if len(ga.labels) == 0 {
		return ""
	}
	if !matchBlank(ga, gb) {
		return fmt.Sprintf("same ground triples and counts (%d blank nodes in %d triples), but the blank node structures differ; first blank-node triples of a: %s; of b: %s",
			len(ga.labels), nbA, strings.Join(firstBlank(ga.triples, 3), " | "), strings.Join(firstBlank(gb.triples, 3), " | "))
	}
	return ""
}

// groundDiff returns the ground triples of ts missing from set (as
// sorted N-Triples) and the number of triples of ts with blank nodes.
func groundDiff(ts []Triple, set map[Triple]struct{}) (missing []string, blank int) {
	for _, t := range ts {
		if t.S.Kind == KindBlank || t.O.Kind == KindBlank {
			blank++
		} else if _, ok := set[t]; !ok {
			missing = append(missing, tripleString(t))
		}
	}
	slices.Sort(missing)
	return missing, blank
}

// firstBlank returns the first n triples with blank nodes in N-Triples
// order.
func firstBlank(ts []Triple, n int) []string {
	var out []string
	for _, t := range ts {
		if t.S.Kind == KindBlank || t.O.Kind == KindBlank {
			out = append(out, tripleString(t))
		}
	}
	slices.Sort(out)
	return firstN(out, n)
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// matchBlank searches a blank node bijection from ga to gb under which
// ga's blank-node triples are exactly gb's (their counts are equal).
func matchBlank(ga, gb *bgraph) bool {
	ra, rb := ga.refiner(), gb.refiner()
	if !sameHistogram(ra, rb) {
		return false
	}
	m := &matcher{ga: ga, gb: gb, setB: gb.set, baseA: ra.clone(), baseB: rb.clone()}
	return m.search(ra, rb)
}

type matcher struct {
	ga, gb       *bgraph
	setB         map[Triple]struct{}
	baseA, baseB *refiner
	pairs        [][2]int32
}

// search extends the current pairs to a full bijection, trying every
// candidate of a tied class and rebuilding the state from the base (plus
// the pairs so far) before each retry.
func (m *matcher) search(ra, rb *refiner) bool {
	ci := ra.popTied()
	if ci < 0 {
		return m.verify(ra, rb)
	}
	x := ra.classes[ci].members[0] // any member: every candidate is tried for it
	colour := ra.classes[ci].colour
	cb, ok := rb.byColour[colour]
	if !ok {
		return false
	}
	// The candidates are the members of b's class in their order in this
	// state; replay rebuilds the same state, so the same order, which
	// saves copying the class at every level of a long greedy descent.
	// The count is taken before the loop: each try individualises a member
	// and refines, which shrinks the class in the state the next test of
	// the bound would read (only some candidates were tried: a fuzz
	// finding, a 3-cycle and a 2-cycle of one predicate).
	n := len(rb.classes[cb].members)
	for i := 0; i < n; i++ {
		if i > 0 {
			ra, rb = m.replay()
		}
		y := rb.classes[cb].members[i]
		ra.touched, rb.touched = ra.touched[:0], rb.touched[:0]
		ra.individualise(x)
		rb.individualise(y)
		if !sameTouched(ra, rb) {
			continue
		}
		m.pairs = append(m.pairs, [2]int32{x, y})
		if m.search(ra, rb) {
			return true
		}
		m.pairs = m.pairs[:len(m.pairs)-1]
	}
	return false
}

// replay rebuilds the state reached by the current pairs.
func (m *matcher) replay() (*refiner, *refiner) {
	ra, rb := m.baseA.clone(), m.baseB.clone()
	for _, p := range m.pairs {
		ra.individualise(p[0])
		rb.individualise(p[1])
	}
	return ra, rb
}

// verify checks the bijection given by the colours (all classes are
// singletons and the histograms agree).
func (m *matcher) verify(ra, rb *refiner) bool {
	toB := make([]string, len(m.ga.labels))
	for i := range toB {
		cb, ok := rb.byColour[ra.colour[i]]
		if !ok || len(rb.classes[cb].members) != 1 {
			return false
		}
		toB[i] = m.gb.labels[rb.classes[cb].members[0]]
	}
	mapTerm := func(t Term) Term {
		if t.Kind == KindBlank {
			t.Value = toB[m.ga.index[t.Value]]
		}
		return t
	}
	for _, t := range m.ga.triples {
		if t.S.Kind != KindBlank && t.O.Kind != KindBlank {
			continue
		}
		if _, ok := m.setB[Triple{mapTerm(t.S), t.P, mapTerm(t.O)}]; !ok {
			return false
		}
	}
	return true // same count of blank-node triples, all mapped into B's set
}

// sameHistogram compares the colour classes of two refiners.
func sameHistogram(ra, rb *refiner) bool {
	if len(ra.classes) != len(rb.classes) {
		return false
	}
	for _, c := range ra.classes {
		cb, ok := rb.byColour[c.colour]
		if !ok || len(rb.classes[cb].members) != len(c.members) {
			return false
		}
	}
	return true
}

// sameTouched compares the classes the last operation changed in either
// refiner: before it the histograms agreed, so only those can differ.
func sameTouched(ra, rb *refiner) bool {
	if len(ra.classes) != len(rb.classes) {
		return false
	}
	check := func(x, y *refiner) bool {
		for _, ci := range x.touched {
			c := &x.classes[ci]
			cy, ok := y.byColour[c.colour]
			if !ok || len(y.classes[cy].members) != len(c.members) {
				return false
			}
		}
		return true
	}
	return check(ra, rb) && check(rb, ra)
}
