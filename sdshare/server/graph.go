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
	return rdf.CanonicalNTriples(ts)
}

// blankFrag is the N-Triples served for a fragment whose blank nodes are
// costly to label, computed once per change of the fragment rather than
// per request: labelling blank nodes canonically takes seconds for 100k
// of them in cycles, serialising a fragment milliseconds. Other fragments
// are not kept (the graph holds their triples already): without blank
// nodes, sorting them per request costs about what writing them does;
// with a few (an address, a list), labelling them takes under keepSteps,
// a few milliseconds at most. So the memory this costs is the N-Triples
// of the few costly fragments only.//
// The kept bytes live in the version's kept file (load.go), located by
// the version's kept map; every fragment with blank nodes has its form
// (cacheRec) in the version's cache file, so that a reload does not label
// it again while its triples as loaded are unchanged (their raw hash:
// its lines sorted, blank node labels as read). Beyond the budget the
// bytes are the sorted lines as loaded (not canonical, but stable for as
// long as the file is, and what the inventory's hash and size describe).
type blankFrag = cacheRec

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

// fragmentForm returns the form of r's fragment (with blank nodes), its
// lines as in the graph file:
// the N-Triples served and hashed in the inventory, and whether they are
// kept (costly to label, or beyond the budget: blankFrag); prevRec is the
// last load's form, reused without labelling when the fragment as loaded
// is unchanged (its kept bytes read from prev). left is what the load
// may still spend on labelling, for all its fragments
// (Config.CanonicalSteps and loadStepsPerTriple a triple): each
// fragment's budget alone let a file of many small costly fragments cost
// that many times over at every start.
func (c *Collection) fragmentForm(r rdf.Term, lines []string, prevRec *cacheRec, prev *version, left *int64) (cacheRec, error) {
	// The loaded lines sorted, so that the raw hash and the canonical
	// labelling's step count depend on the content only.
	lines = slices.Clone(lines)
	slices.Sort(lines)
	lines = slices.Compact(lines)
	h := sha256.New()
	for _, l := range lines {
		io.WriteString(h, l)
	}
	raw := [32]byte(h.Sum(nil))
	if prevRec != nil && prevRec.raw == raw {
		return *prevRec, nil // its kept bytes stay where they are
	}
	sorted, err := parseLines(lines)
	if err != nil {
		return cacheRec{}, err
	}
	c.canonRuns.Add(1)
	if hook := c.srv.beforeCanon; hook != nil {
		hook(r.Value)
	}
	cr := cacheRec{iri: r.Value, raw: raw}
	budget := min(c.srv.cfg.CanonicalSteps, max(*left, 0))
	cts, used, err := rdf.CanonicalBounded(sorted, budget)
	*left -= used
	if err != nil {
		// Beyond the budget: the labels as loaded, stable until the file
		// changes, rather than no fragment at all.
		c.canonOver.Add(1)
		cr.over = true
		cts = sorted
		c.srv.log.Warn("fragment's blank nodes beyond the canonical labelling budget: served with their labels as loaded, so a rewrite of the file with other labels reports it updated",
			"collection", c.name, "resource", r.Value, "triples", len(sorted), "budget", budget, "load budget left", max(*left, 0), "err", err)
	}
	var b strings.Builder
	for _, t := range cts {
		b.WriteString(ntLine(t))
	}
	cr.nt = []byte(b.String())
	cr.sha, cr.size = sha256.Sum256(cr.nt), int64(len(cr.nt))
	// Cheap ones are labelled again per request, same bytes.
	cr.kept = cr.over || used > keepSteps
	return cr, nil
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
