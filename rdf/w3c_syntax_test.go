package rdf

import (
	"io"
	"iter"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// w3cTest is one entry of a W3C rdf-tests manifest.
type w3cTest struct {
	name, kind, action, result string // action, result: paths under the suite's directory
}

// readW3CManifest reads a suite's manifest.ttl with our own Turtle reader
// and returns its tests, resolving their files against the suite's
// published location (which is also the base the tests assume).
func readW3CManifest(t *testing.T, dir, published string) []w3cTest {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "manifest.ttl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const mf = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
	tests := map[Term]*w3cTest{}
	get := func(s Term) *w3cTest {
		if tests[s] == nil {
			tests[s] = &w3cTest{name: strings.TrimPrefix(s.Value, published+"manifest.ttl#")}
		}
		return tests[s]
	}
	for tr, err := range parseTurtle(f, published+"manifest.ttl") {
		if err != nil {
			t.Fatalf("manifest: %v", err)
		}
		switch tr.P.Value {
		case RDFNS + "type":
			if k, ok := strings.CutPrefix(tr.O.Value, "http://www.w3.org/ns/rdftest#"); ok {
				get(tr.S).kind = k
			}
		case mf + "action":
			get(tr.S).action = strings.TrimPrefix(tr.O.Value, published)
		case mf + "result":
			get(tr.S).result = strings.TrimPrefix(tr.O.Value, published)
		}
	}
	var out []w3cTest
	for _, tc := range tests {
		if tc.kind != "" && tc.action != "" {
			out = append(out, *tc)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// runW3CSuite runs a W3C syntax suite: positive syntax tests must parse,
// negative ones must fail with a *SyntaxError, evaluation tests must give
// a graph isomorphic to the expected N-Triples, and every parsed graph
// must survive a round trip through our writer of the same format.
func runW3CSuite(t *testing.T, dir, published string, want map[string]int,
	parse func(io.Reader, string) iter.Seq2[Triple, error], newW func(io.Writer) Writer) {
	tests := readW3CManifest(t, dir, published)
	counts := map[string]int{}
	for _, tc := range tests {
		counts[tc.kind]++
	}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("manifest has %d %s tests, want %d", counts[k], k, n)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := os.ReadFile(filepath.Join(dir, tc.action))
			if err != nil {
				t.Fatal(err)
			}
			got, err := collectSeq(parse(strings.NewReader(string(doc)), published+tc.action))
			if strings.Contains(tc.kind, "Negative") {
				if _, ok := err.(*SyntaxError); !ok {
					t.Fatalf("%s: parsed (%d triples, err %v)\n%s", tc.kind, len(got), err, doc)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v\n%s", tc.kind, err, doc)
			}
			if tc.result != "" {
				nt, err := os.ReadFile(filepath.Join(dir, tc.result))
				if err != nil {
					t.Fatal(err)
				}
				expected, err := collectSeq(Parse(strings.NewReader(string(nt)), NTriples, ""))
				if err != nil {
					t.Fatalf("expected result %s: %v", tc.result, err)
				}
				if d := IsomorphicDiff(got, expected); d != "" {
					t.Errorf("%s\ngot:\n%swant:\n%s\n%s", d, dump(got), dump(expected), doc)
				}
			}
			back, out := roundTrip(t, got, newW, parse)
			if !Isomorphic(got, back) {
				t.Errorf("round trip changed the graph\n%s", out)
			}
		})
	}
}

// TestW3CTurtleSuite runs the W3C RDF 1.1 Turtle test suite
// (testdata/w3c-turtle, copied from w3c/rdf-tests rdf/rdf11/rdf-turtle
// under the W3C test suite licence).
func TestW3CTurtleSuite(t *testing.T) {
	runW3CSuite(t, filepath.Join("testdata", "w3c-turtle"), "https://w3c.github.io/rdf-tests/rdf/rdf11/rdf-turtle/",
		map[string]int{"TestTurtleEval": 145, "TestTurtlePositiveSyntax": 74, "TestTurtleNegativeSyntax": 94},
		parseTurtle, newTurtleWriter)
}

// TestW3CRDFXMLSuite runs the W3C RDF 1.1 XML Syntax test suite
// (testdata/w3c-rdfxml, copied from w3c/rdf-tests rdf/rdf11/rdf-xml
// under the W3C test suite licence).
func TestW3CRDFXMLSuite(t *testing.T) {
	runW3CSuite(t, filepath.Join("testdata", "w3c-rdfxml"), "https://w3c.github.io/rdf-tests/rdf/rdf11/rdf-xml/",
		// The manifest lists 173 entries but defines 166 of them.
		map[string]int{"TestXMLEval": 126, "TestXMLNegativeSyntax": 40},
		parseRDFXML, newRDFXMLWriter)
}
