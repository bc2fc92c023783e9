package server

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare"
)

const (
	ttlData = `@prefix ex: <http://ex/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:t1 rdfs:label "Turtle one"@en ; ex:p [ ex:q [ ex:r "deep" ] ] .
ex:t2 ex:p ( "a" "b" ) .
`
	rdfxmlData = `<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://ex/">
  <rdf:Description rdf:about="http://ex/x1">
    <ex:p rdf:nodeID="n1"/>
    <ex:v>plain</ex:v>
  </rdf:Description>
  <rdf:Description rdf:nodeID="n1"><ex:q>in bnode</ex:q></rdf:Description>
</rdf:RDF>
`
	ntData = "<http://ex/n1> <http://ex/p> _:b1 .\n_:b1 <http://ex/q> \"nt\" .\n"
)

func parseAll(t *testing.T, body string, f rdf.Format) []rdf.Triple {
	t.Helper()
	var out []rdf.Triple
	for tr, err := range rdf.Parse(strings.NewReader(body), f, "") {
		if err != nil {
			t.Fatalf("%v: %v\n%s", f, err, body)
		}
		out = append(out, tr)
	}
	return out
}

// TestFormats: a collection of Turtle, RDF/XML and N-Triples files is
// served in every format, each parsing back to the same graph (blank
// nodes included); fragments likewise (SD-SRV-29, SD-SRV-30).
func TestFormats(t *testing.T) {
	e := newEnv(t, map[string]string{"a.ttl": ttlData, "b.rdf": rdfxmlData, "c.nt": ntData}, nil)
	c := e.coll()
	waitFor(t, "the snapshot", func() bool { return c.snapshotReady(c.version().key) })
	var want []rdf.Triple
	for i, f := range []struct {
		body string
		f    rdf.Format
	}{{ttlData, rdf.Turtle}, {rdfxmlData, rdf.RDFXML}, {ntData, rdf.NTriples}} {
		for _, tr := range parseAll(t, f.body, f.f) {
			// keep the three files' blank nodes apart
			if tr.S.IsBlank() {
				tr.S.Value = string(rune('a'+i)) + tr.S.Value
			}
			if tr.O.IsBlank() {
				tr.O.Value = string(rune('a'+i)) + tr.O.Value
			}
			want = append(want, tr)
		}
	}
	snaps := e.feed(e.base + "c/snapshots")
	var types []string
	for _, l := range linksRel(snaps.Entries[0].Links, sdshare.RelSnapshot) {
		types = append(types, l.Type)
		resp, body := e.get(l.Href, "Accept", l.Type)
		f, ok := rdf.FormatFor(l.Type)
		if resp.StatusCode != 200 || !ok {
			t.Fatalf("%s: %s", l.Href, resp.Status)
		}
		got := parseAll(t, string(body), f)
		if len(got) != len(want) || hashTriples(got) != hashTriples(want) {
			t.Errorf("snapshot as %s: %d triples, not the graph of the files (%d):\n%s", l.Type, len(got), len(want), body)
		}
	}
	slices.Sort(types)
	if w := []string{"application/n-triples", "application/rdf+xml", "text/plain", "text/turtle"}; !slices.Equal(types, w) {
		t.Errorf("snapshot types %v, want %v", types, w)
	}
	for _, iri := range []string{"http://ex/t1", "http://ex/t2", "http://ex/x1", "http://ex/n1"} {
		_, nt := e.get(fragmentURL(e, iri))
		ref := parseAll(t, string(nt), rdf.NTriples)
		if len(ref) == 0 {
			t.Errorf("fragment of %s is empty", iri)
		}
		for _, typ := range []string{"text/turtle", "application/rdf+xml"} {
			f, _ := rdf.FormatFor(typ)
			_, body := e.get(fragmentURL(e, iri), "Accept", typ)
			if got := parseAll(t, string(body), f); hashTriples(got) != hashTriples(ref) {
				t.Errorf("fragment of %s as %s differs from N-Triples:\n%s\nvs\n%s", iri, typ, body, nt)
			}
		}
	}
	t.Run("relabelled blank nodes are no change", func(t *testing.T) {
		// A new resource with blank nodes before the others renumbers the
		// reader's generated labels of every later []; only the new
		// resource is a change.
		e.write("a.ttl", strings.Replace(ttlData, "ex:t1 ", "ex:t0 ex:p [ ex:q [ ex:q [] ] ] .\nex:t1 ", 1))
		waitFor(t, "the change", func() bool { return c.version().seq >= 1 })
		if got := feedResources(e); !slices.Equal(got, []string{"http://ex/t0"}) {
			t.Errorf("entries %v, want only t0", got)
		}
	})
}

func TestHashTriplesLabelFree(t *testing.T) {
	a := parseAll(t, "<http://r> <http://p> _:a .\n_:a <http://q> _:b .\n_:b <http://q> _:a .\n_:b <http://v> \"1\" .\n", rdf.NTriples)
	b := parseAll(t, "_:y <http://v> \"1\" .\n_:x <http://q> _:y .\n<http://r> <http://p> _:x .\n_:y <http://q> _:x .\n", rdf.NTriples)
	c := parseAll(t, "<http://r> <http://p> _:a .\n_:a <http://q> _:b .\n_:b <http://q> _:a .\n_:a <http://v> \"1\" .\n", rdf.NTriples)
	if hashTriples(a) != hashTriples(b) {
		t.Error("isomorphic graphs hash differently")
	}
	if hashTriples(a) == hashTriples(c) {
		t.Error("different graphs hash equal")
	}
	// Symmetric blank nodes keep distinct labels: two stay two.
	sym := parseAll(t, "<http://r> <http://p> _:a .\n<http://r> <http://p> _:b .\n_:a <http://q> \"x\" .\n_:b <http://q> \"x\" .\n", rdf.NTriples)
	ts, nt := canonical(sym)
	if len(ts) != 4 || len(parseAll(t, string(nt), rdf.NTriples)) != 4 {
		t.Errorf("symmetric blank nodes merged:\n%s", nt)
	}
	if _, nt2 := canonical([]rdf.Triple{sym[3], sym[1], sym[2], sym[0]}); string(nt2) != string(nt) {
		t.Errorf("canonical form depends on order:\n%s\nvs\n%s", nt, nt2)
	}
}

// FuzzQuery: the fragments feed's query parsers refuse bad input with an
// error and never panic; what they accept round-trips.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{"2026-11-24T00:00:00Z", "2026-11-24T00:00:00.123456789+05:30", "2026-11-24t00:00:00z", "s1", "s", "szzzzzzzzzzzzzz", "", "2026-11-24T00:00:00 01:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if tm, err := parseSince(s); err == nil {
			if back, err := parseSince(tm.Format(time.RFC3339Nano)); err != nil || !back.Equal(tm) {
				t.Errorf("since %q: %v does not round-trip: %v %v", s, tm, back, err)
			}
		}
		if n, ok := parseCursor(s); ok {
			if m, ok := parseCursor(pageCursor(n)); !ok || m != n {
				t.Errorf("cursor %q: %d does not round-trip", s, n)
			}
		}
	})
}
