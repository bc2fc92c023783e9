package rdf

import (
	"bytes"
	"io"
	"iter"
	"os/exec"
	"strings"
	"testing"
)

// rapper runs Redland's rapper (Debian package raptor2-utils), a parser
// written independently of ours, on doc and returns its triples.
func rapper(t *testing.T, syntax, doc, base string) []Triple {
	t.Helper()
	if base == "" {
		base = "http://rapper.invalid/base"
	}
	cmd := exec.CommandContext(t.Context(), "rapper", "-q", "-i", syntax, "-o", "ntriples", "-", base)
	// rapper refuses a byte order mark, which we accept.
	cmd.Stdin = strings.NewReader(strings.TrimPrefix(doc, "\ufeff"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("rapper -i %s: %v\n%s\n%s", syntax, err, errb.String(), doc)
	}
	ts, err := collectSeq(Parse(&out, NTriples, ""))
	if err != nil {
		t.Fatalf("rapper's N-Triples: %v\n%s", err, out.String())
	}
	return ts
}

func needRapper(t *testing.T) {
	if _, err := exec.LookPath("rapper"); err != nil {
		t.Skip("rapper not installed (apt-get install raptor2-utils): the peer cross-check needs it")
	}
}

// TestRapperAgrees: on every spec example, rapper and our readers read
// the same graph, and rapper reads what our writers write as the graph
// we wrote. Base IRIs are given so that rapper's output is absolute.
func TestRapperAgrees(t *testing.T) {
	if testing.Short() {
		t.Skip("about 120 runs of rapper; the run without -short has them")
	}
	needRapper(t)
	const base = "http://rapper.invalid/base"
	type tcase struct {
		name, syntax, doc, base string
		parse                   func(io.Reader, string) iter.Seq2[Triple, error]
	}
	var cases []tcase
	for _, tc := range turtleCases {
		cases = append(cases, tcase{"turtle " + tc.name, "turtle", tc.doc, tc.base, parseTurtle})
	}
	for _, tc := range rdfxmlCases {
		if strings.HasPrefix(tc.name, "XML literal:") {
			// raptor's canonical form differs from Exclusive C14N's here:
			// it sorts attributes by qualified name (C14N: namespace URI,
			// then local name, unqualified first) and pads comments.
			continue
		}
		cases = append(cases, tcase{"rdfxml " + tc.name, "rdfxml", tc.doc, tc.base, parseRDFXML})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // rapper runs are mostly waiting
			b := tc.base
			if b == "" {
				b = base
			}
			ours, err := collectSeq(tc.parse(strings.NewReader(tc.doc), b))
			if err != nil {
				t.Fatal(err)
			}
			if theirs := rapper(t, tc.syntax, tc.doc, b); !Isomorphic(ours, theirs) {
				t.Errorf("rapper reads\n%swe read\n%s", dump(theirs), dump(ours))
			}
			for _, w := range []struct {
				syntax string
				newW   func(io.Writer) Writer
			}{{"turtle", newTurtleWriter}, {"rdfxml", newRDFXMLWriter}} {
				var buf bytes.Buffer
				wr := w.newW(&buf)
				for _, tr := range ours {
					if err := wr.Write(tr); err != nil {
						t.Fatalf("%s write: %v", w.syntax, err)
					}
				}
				if err := wr.Close(); err != nil {
					t.Fatal(err)
				}
				if theirs := rapper(t, w.syntax, buf.String(), b); !Isomorphic(ours, theirs) {
					t.Errorf("rapper reads our %s as\n%swe wrote\n%s\n%s", w.syntax, dump(theirs), dump(ours), buf.String())
				}
			}
		})
	}
}

// TestRapperRejectsToo: rapper also refuses what TestTurtleRejects
// refuses, so our reader is not stricter than a real peer there.
func TestRapperRejectsToo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs rapper once per document; the run without -short has it")
	}
	needRapper(t)
	// raptor 2.0.15 is lenient here; the Turtle grammar is not (an ANON
	// subject needs a predicateObjectList, LANGTAG subtags are not empty).
	lenient := map[string]bool{
		`@prefix : <http://ex/> . [] .`:            true,
		`@prefix : <http://ex/> . :a :b "x"@en- .`: true,
	}
	for _, doc := range turtleBad {
		if lenient[doc] {
			continue
		}
		cmd := exec.CommandContext(t.Context(), "rapper", "-q", "-i", "turtle", "-o", "ntriples", "-", "http://rapper.invalid/")
		cmd.Stdin = strings.NewReader(doc)
		if out, err := cmd.Output(); err == nil {
			t.Errorf("rapper accepts\n%s\nas\n%s", doc, out)
		}
	}
}
