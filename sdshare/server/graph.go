package server

import (
	"crypto/sha256"
	"io"
	"iter"
	"slices"
	"strings"

	"github.com/resourcesync-go/resourcesync/rdf"
)

const rdfsLabel = "http://www.w3.org/2000/01/rdf-schema#label"

// graph is one loaded version of a collection: an rdf.Graph that is never
// changed after newGraph (so concurrent readers need no lock) plus its
// subjects in N-Triples order, which makes snapshots, chunks and the
// change diff deterministic.
type graph struct {
	g        *rdf.Graph
	subjects []rdf.Term // every subject, sorted by N-Triples form
}

func newGraph(rg *rdf.Graph) *graph {
	g := &graph{g: rg}
	type keyed struct {
		k string
		t rdf.Term
	}
	ks := make([]keyed, 0, len(g.subjects))
	for s := range rg.Subjects() {
		ks = append(ks, keyed{s.String(), s})
	}
	slices.SortFunc(ks, func(a, b keyed) int { return strings.Compare(a.k, b.k) })
	g.subjects = make([]rdf.Term, len(ks))
	for i, k := range ks {
		g.subjects[i] = k.t
	}
	return g
}

// Len returns the number of triples.
func (g *graph) Len() int { return g.g.Len() }

// resources returns the IRI subjects (the resources of the collection) in
// sorted order.
func (g *graph) resources() []rdf.Term {
	var out []rdf.Term
	for _, s := range g.subjects {
		if s.IsIRI() {
			out = append(out, s)
		}
	}
	return out
}

// fragment returns r's fragment (SD-SRV-26).
func (g *graph) fragment(r rdf.Term) []rdf.Triple { return g.g.Fragment(r) }

// union returns the union of the fragments of rs, each triple once, and
// adds the blank nodes they reach to reached.
func (g *graph) union(rs []rdf.Term, reached map[rdf.Term]bool) []rdf.Triple {
	seen := map[rdf.Triple]bool{}
	var out []rdf.Triple
	for _, r := range rs {
		for _, t := range g.fragment(r) {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
				if t.S.IsBlank() {
					reached[t.S] = true
				}
			}
		}
	}
	return out
}

// label returns r's rdfs:label (the least, for determinism), or "".
func (g *graph) label(r rdf.Term) string {
	best := ""
	for _, t := range g.g.BySubject(r) {
		if t.P.IsIRI() && t.P.Value == rdfsLabel && t.O.IsLiteral() && (best == "" || t.O.Value < best) {
			best = t.O.Value
		}
	}
	return best
}

// all yields every triple of g, subject by subject in sorted order.
func (g *graph) all() iter.Seq[rdf.Triple] {
	return func(yield func(rdf.Triple) bool) {
		for _, s := range g.subjects {
			for _, t := range g.g.BySubject(s) {
				if !yield(t) {
					return
				}
			}
		}
	}
}

// versionHash hashes g's triples in all's order: cheap, and stable as
// long as the files are.
func (g *graph) versionHash() [32]byte {
	h := sha256.New()
	for t := range g.all() {
		io.WriteString(h, ntLine(t))
	}
	return [32]byte(h.Sum(nil))
}

// ntLine is t as one N-Triples statement.
func ntLine(t rdf.Triple) string {
	return t.S.String() + " " + t.P.String() + " " + t.O.String() + " .\n"
}

// canonical returns ts in canonical form (rdf.Canonical: blank nodes
// relabelled from their structure, duplicates dropped, sorted) and that
// form's N-Triples bytes, whose SHA-256 is rdf.Hash(ts). Two inputs that
// differ only in blank node labels or order give the same bytes, so the
// hash detects changes of a fragment without reporting a file rewritten
// with other labels (a Turtle reader numbers its [] anew when a node is
// inserted before them), and the bytes served for a fragment always match
// the hash and size in the inventory (which a ResourceSync view of the
// collection publishes).
func canonical(ts []rdf.Triple) ([]rdf.Triple, []byte) {
	cts := rdf.Canonical(ts)
	var b strings.Builder
	for _, t := range cts {
		b.WriteString(ntLine(t))
	}
	return cts, []byte(b.String())
}

// blankFrag is the N-Triples served for a fragment whose blank nodes are
// costly to label, computed once per change of the fragment rather than
// per request: labelling blank nodes canonically takes seconds for 100k
// of them in cycles, serialising a fragment milliseconds. Other fragments
// are not kept (the graph holds their triples already): without blank
// nodes, sorting them per request costs about what writing them does;
// with a few (an address, a list), labelling them takes under keepSteps,
// a few milliseconds at most. So the memory this costs is the N-Triples
// of the few costly fragments only.
type blankFrag struct {
	// raw is the SHA-256 of the fragment as loaded (its lines sorted,
	// blank node labels as read): a reload that leaves it unchanged
	// reuses nt without canonicalising again.
	raw [32]byte
	// nt is the canonical N-Triples, or, beyond the budget, the sorted
	// lines as loaded (overBudget): not canonical, but stable for as long
	// as the file is, computed once, and what the inventory's hash and
	// size describe.
	nt         []byte
	overBudget bool
}

// loadStepsPerTriple is the labelling work a load may spend per triple of
// the collection beyond Config.CanonicalSteps, for all its fragments
// together (see fragmentForm).
const loadStepsPerTriple = 64

// keepSteps is the labelling work (rdf.CanonicalBounded steps, about a
// microsecond each) beyond which a fragment's form is kept rather than
// labelled again per request.
const keepSteps = 4096

// hasBlank reports whether a triple of ts has a blank node.
func hasBlank(ts []rdf.Triple) bool {
	return slices.ContainsFunc(ts, func(t rdf.Triple) bool { return t.S.IsBlank() || t.O.IsBlank() })
}

// fragmentForm returns the N-Triples of r's fragment in g (the bytes
// served and hashed in the inventory) and, when its blank nodes are
// costly to label (or beyond the budget), the blankFrag that keeps them;
// prev is the last version's, reused when the fragment as loaded is
// unchanged. left is what the load may still spend on labelling, for all
// its fragments (Config.CanonicalSteps and loadStepsPerTriple a triple):
// each fragment's budget alone let a file of many small costly fragments
// cost that many times over at every start.
func (c *Collection) fragmentForm(g *graph, r rdf.Term, prev map[string]*blankFrag, left *int64) ([]byte, *blankFrag) {
	ts := g.fragment(r)
	if !hasBlank(ts) {
		_, nt := canonical(ts)
		return nt, nil
	}
	// The loaded triples sorted, so that the raw hash and the canonical
	// labelling's step count depend on the content only.
	lines := make([]string, len(ts))
	for i, t := range ts {
		lines[i] = ntLine(t)
	}
	idx := make([]int, len(ts))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(lines[a], lines[b]) })
	h := sha256.New()
	sorted := make([]rdf.Triple, 0, len(ts))
	for k, i := range idx {
		if k > 0 && lines[i] == lines[idx[k-1]] {
			continue
		}
		io.WriteString(h, lines[i])
		sorted = append(sorted, ts[i])
	}
	raw := [32]byte(h.Sum(nil))
	if p := prev[r.Value]; p != nil && p.raw == raw {
		return p.nt, p
	}
	c.canonRuns.Add(1)
	if hook := c.srv.beforeCanon; hook != nil {
		hook(r.Value)
	}
	bf := &blankFrag{raw: raw}
	budget := min(c.srv.cfg.CanonicalSteps, max(*left, 0))
	cts, used, err := rdf.CanonicalBounded(sorted, budget)
	*left -= used
	if err != nil {
		// Beyond the budget: the labels as loaded, stable until the file
		// changes, rather than no fragment at all.
		c.canonOver.Add(1)
		bf.overBudget = true
		cts = sorted
		c.srv.log.Warn("fragment's blank nodes beyond the canonical labelling budget: served with their labels as loaded, so a rewrite of the file with other labels reports it updated",
			"collection", c.name, "resource", r.Value, "triples", len(sorted), "budget", budget, "load budget left", max(*left, 0), "err", err)
	}
	var b strings.Builder
	for _, t := range cts {
		b.WriteString(ntLine(t))
	}
	bf.nt = []byte(b.String())
	if !bf.overBudget && used <= keepSteps {
		return bf.nt, nil // cheap: labelled again per request, same bytes
	}
	return bf.nt, bf
}

// hashTriples returns the SHA-256 of ts's canonical N-Triples.
func hashTriples(ts []rdf.Triple) [32]byte { return rdf.Hash(ts) }

// writeTriples writes ts in format f.
func writeTriples(w io.Writer, f rdf.Format, ts iter.Seq[rdf.Triple]) error {
	wr, err := rdf.NewWriter(w, f)
	if err != nil {
		return err
	}
	if wr == nil {
		return rdf.ErrUnsupported
	}
	for t := range ts {
		if err := wr.Write(t); err != nil {
			return err
		}
	}
	return wr.Close()
}

// canWrite reports whether package rdf has a writer for f.
func canWrite(f rdf.Format) bool {
	w, err := rdf.NewWriter(io.Discard, f)
	return err == nil && w != nil
}

// offer is a representation of RDF data the server answers with.
type offer struct {
	Type   string     // the media type, as in links
	Format rdf.Format // what is written
	Param  string     // the value of ?format= that selects it
}

// negotiate picks among offs by Accept (rdf.Negotiate); mediaType is what
// Content-Type says. ok is false when nothing is acceptable (406). A
// text/plain offer (N-Triples under its SDShare name) is labelled
// text/plain unless Accept names another N-Triples type.
func negotiate(accept string, offs []offer) (o offer, mediaType string, ok bool) {
	var fs []rdf.Format
	for _, o := range offs {
		if !slices.Contains(fs, o.Format) {
			fs = append(fs, o.Format)
		}
	}
	f, mt, ok := rdf.Negotiate(accept, fs)
	if !ok {
		return offer{}, "", false
	}
	i := slices.IndexFunc(offs, func(o offer) bool { return o.Format == f })
	o = offs[i]
	if len(offs) == 1 && o.Type != f.MediaType() && mt == f.MediaType() && !strings.Contains(strings.ToLower(accept), mt) {
		mt = o.Type // format=txt with Accept absent or a wildcard
	}
	return o, mt, true
}
