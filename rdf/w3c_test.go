package rdf

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestW3CNTriplesSuite runs the W3C RDF 1.1 N-Triples syntax tests
// (testdata/w3c-ntriples, copied from w3c/rdf-tests under the W3C test
// suite licence): positive tests must parse and survive a write/re-parse
// round trip, negative ones must fail with a *SyntaxError.
func TestW3CNTriplesSuite(t *testing.T) {
	dir := filepath.Join("testdata", "w3c-ntriples")
	manifest, err := os.ReadFile(filepath.Join(dir, "manifest.ttl"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?s)rdf:type rdft:(TestNTriples(?:Positive|Negative)Syntax)\s*;.*?mf:action\s+<([^>]+)>`)
	tests := re.FindAllSubmatch(manifest, -1)
	if len(tests) != 70 {
		t.Fatalf("read %d tests from the manifest, want 70", len(tests))
	}
	for _, m := range tests {
		kind, file := string(m[1]), string(m[2])
		t.Run(file, func(t *testing.T) {
			doc, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			ts, err := collect(t, string(doc))
			if kind == "TestNTriplesNegativeSyntax" {
				if _, ok := err.(*SyntaxError); !ok {
					t.Fatalf("negative test parsed (%d triples, err %v)", len(ts), err)
				}
				return
			}
			if err != nil {
				t.Fatalf("positive test failed: %v", err)
			}
			out := writeNT(t, ts)
			back, err := collect(t, out)
			if err != nil || len(back) != len(ts) {
				t.Fatalf("re-parse: %d triples, %v\n%s", len(back), err, out)
			}
			for i := range ts {
				if back[i] != ts[i] {
					t.Errorf("triple %d: %#v became %#v", i, ts[i], back[i])
				}
			}
		})
	}
}

// TestW3CCanonicalNTriples checks the writer against the RDF 1.2
// N-Triples canonicalisation tests (testdata/w3c-ntriples-c14n, from
// w3c/rdf-tests; the tests of RDF 1.2-only syntax, triple terms and
// directional language tags, are left out): what the writer writes for
// X.nt is X-c14n.nt byte for byte.
func TestW3CCanonicalNTriples(t *testing.T) {
	dir := filepath.Join("testdata", "w3c-ntriples-c14n")
	results, err := filepath.Glob(filepath.Join(dir, "*-c14n.nt"))
	if err != nil || len(results) < 30 {
		t.Fatalf("found %d tests, %v", len(results), err)
	}
	inputs := map[string]string{}
	for _, res := range results {
		inputs[strings.TrimSuffix(res, "-c14n.nt")+".nt"] = res
	}
	// The one test whose input and result names differ.
	inputs[filepath.Join(dir, "literal_needing_uchar_escaping-02.nt")] = filepath.Join(dir, "literal_needing_uchar_escaping-01-c14n.nt")
	for in, res := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			doc, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(res)
			if err != nil {
				t.Fatal(err)
			}
			ts, err := collect(t, string(doc))
			if err != nil {
				t.Fatal(err)
			}
			out := writeNT(t, ts)
			if out != string(want) {
				t.Errorf("got\n%q\nwant\n%q", out, want)
			}
		})
	}
}
