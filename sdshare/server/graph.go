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
