package rdf

import (
	"bytes"
	"errors"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writtenAs is what a writer makes of t: blank node labels pass through
// safeBlankLabel, everything else is kept.
func writtenAs(t Triple) Triple {
	f := func(x Term) Term {
		if x.IsBlank() {
			return Blank(safeBlankLabel(x.Value))
		}
		return x
	}
	return Triple{f(t.S), t.P, f(t.O)}
}

// checkRewrite writes ts with newW and re-reads it with parse: the result
// must be ts in the same order, labels mapped by safeBlankLabel. A writer
// may refuse a triple its format cannot carry (ErrNotSerializable), then
// there is nothing to compare.
func checkRewrite(t *testing.T, ts []Triple, newW func(io.Writer) Writer, parse func(io.Reader, string) iter.Seq2[Triple, error]) {
	var buf bytes.Buffer
	w := newW(&buf)
	for _, tr := range ts {
		if err := w.Write(tr); err != nil {
			if errors.Is(err, ErrNotSerializable) {
				return
			}
			t.Fatalf("write %v: %v", tr, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	back, err := collectSeq(parse(bytes.NewReader(buf.Bytes()), ""))
	if err != nil {
		t.Fatalf("re-parse: %v\n%s", err, buf.String())
	}
	if len(back) != len(ts) {
		t.Fatalf("re-parse gave %d triples, want %d\n%s", len(back), len(ts), buf.String())
	}
	for i := range ts {
		if want := writtenAs(ts[i]); back[i] != want {
			t.Fatalf("triple %d: got %v, want %v\n%s", i, back[i], want, buf.String())
		}
	}
}

// checkNTriples: whatever the Turtle and RDF/XML readers return, blank
// node labels included, the N-Triples writer takes and its reader gives
// back unchanged.
func checkNTriples(t *testing.T, in []Triple) {
	// N-Triples has absolute IRIs only; a document without a base may
	// leave relative ones.
	var ts []Triple
	for _, tr := range in {
		if relIRI(tr.S) || relIRI(tr.P) || relIRI(tr.O) || tr.O.IsLiteral() && !hasScheme(tr.O.Datatype) {
			continue
		}
		ts = append(ts, tr)
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, NTriples)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range ts {
		if err := w.Write(tr); err != nil {
			t.Fatalf("n-triples write %v: %v", tr, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	back, err := collectSeq(Parse(bytes.NewReader(buf.Bytes()), NTriples, ""))
	if err != nil {
		t.Fatalf("n-triples re-parse: %v\n%s", err, buf.String())
	}
	if len(back) != len(ts) {
		t.Fatalf("n-triples gave %d triples, want %d", len(back), len(ts))
	}
	for i := range ts {
		if back[i] != ts[i] {
			t.Fatalf("n-triples triple %d: got %v, want %v", i, back[i], ts[i])
		}
	}
}

// addSeedFiles adds the files matching pattern (the W3C suites) as seeds.
func addSeedFiles(f *testing.F, pattern string) {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		f.Fatalf("seed files %s: %v", pattern, err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
}

func FuzzTurtle(f *testing.F) {
	for _, tc := range turtleCases {
		f.Add(tc.doc)
	}
	f.Add("@prefix : <http://ex/> . :a :b ( [ :c 1.e5 ] ) .")
	addSeedFiles(f, "testdata/w3c-turtle/*.ttl")
	f.Add(`<a> <b> """x""""" , '\u00e9'@EN .`)
	f.Fuzz(func(t *testing.T, doc string) {
		ts, err := collectSeq(parseTurtle(strings.NewReader(doc), "http://base.example/d/"))
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v is not a syntax error", err)
			}
			return
		}
		checkRewrite(t, ts, newTurtleWriter, parseTurtle)
		checkRewrite(t, ts, newRDFXMLWriter, parseRDFXML)
		checkNTriples(t, ts)
	})
}

func FuzzRDFXML(f *testing.F) {
	for _, tc := range rdfxmlCases {
		f.Add(tc.doc)
	}
	addSeedFiles(f, "testdata/w3c-rdfxml/*/*.rdf")
	f.Add(`<ex:T ` + rdfDecl + ` xmlns:ex="http://ex/" ex:a="1"><ex:p rdf:parseType="Resource"><rdf:li/></ex:p></ex:T>`)
	f.Fuzz(func(t *testing.T, doc string) {
		ts, err := collectSeq(parseRDFXML(strings.NewReader(doc), "http://base.example/d/"))
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v is not a syntax error", err)
			}
			return
		}
		checkRewrite(t, ts, newRDFXMLWriter, parseRDFXML)
		checkRewrite(t, ts, newTurtleWriter, parseTurtle)
		checkNTriples(t, ts)
	})
}

func relIRI(x Term) bool { return x.IsIRI() && !hasScheme(x.Value) }
