package rdf

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestRetainedLimit: a document that makes a reader keep more than
// MaxRetainedBytes across tokens (prefixes, namespaces, xml:base, the
// terms of open [ ] and ( ), open elements) is refused with ErrLimit as
// soon as it passes the limit, having allocated a small multiple of the
// limit, not of the document; the same tokens not kept (redefined, closed)
// pass. The limit is scaled down to 1 MiB and the tokens to 200 KiB; the
// documents hold 60 such tokens (12 MiB kept when unbounded).
func TestRetainedLimit(t *testing.T) {
	defer func(old int) { maxRetained = old }(maxRetained)
	maxRetained = 1 << 20
	const levels = 60
	long := func(i int) string { return fmt.Sprintf("http://example.org/%d/%s", i, strings.Repeat("a", 200<<10)) }
	rep := func(f func(i int) string) string {
		var b strings.Builder
		for i := range levels {
			b.WriteString(f(i))
		}
		return b.String()
	}
	const rdfx = `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://example.org/">`
	tests := []struct {
		name      string
		f         Format
		doc       string
		wantLimit bool
	}{
		{"turtle prefixes", Turtle, rep(func(i int) string { return fmt.Sprintf("@prefix p%d: <%s> .\n", i, long(i)) }), true},
		{"turtle SPARQL PREFIX", Turtle, rep(func(i int) string { return fmt.Sprintf("PREFIX p%d: <%s>\n", i, long(i)) }), true},
		{"turtle nested [ ]", Turtle, "<http://example.org/s> " + rep(func(i int) string { return fmt.Sprintf("<%s> [ ", long(i)) }), true},
		{"turtle nested ( [ ] )", Turtle, "<http://example.org/s> <http://example.org/p> " + rep(func(i int) string { return fmt.Sprintf("( [ <%s> ", long(i)) }), true},
		{"turtle [ ] subject nested", Turtle, rep(func(i int) string { return fmt.Sprintf("[ <%s> ", long(i)) }), true},
		{"turtle base and prefixes", Turtle, "@base <" + long(0) + "> .\n" + rep(func(i int) string { return fmt.Sprintf("@prefix p%d: <%s> .\n", i, long(i)[:100<<10]) }), true},
		{"rdfxml nested xmlns", RDFXML, rdfx + `<rdf:Description>` + rep(func(i int) string {
			return fmt.Sprintf(`<ex:p rdf:parseType="Resource" xmlns:a%d="%s">`, i, long(i))
		}), true},
		{"rdfxml nested xmlns on node elements", RDFXML, rdfx + rep(func(i int) string {
			return fmt.Sprintf(`<rdf:Description xmlns:a%d="%s"><ex:p>`, i, long(i))
		}), true},
		{"rdfxml nested xml:base", RDFXML, rdfx + `<rdf:Description>` + rep(func(i int) string {
			return fmt.Sprintf(`<ex:p rdf:parseType="Resource" xml:base="%s">`, long(i))
		}), true},
		{"rdfxml nested predicates", RDFXML, rdfx + `<rdf:Description>` + rep(func(i int) string {
			return fmt.Sprintf(`<x:p%d xmlns:x="%s" rdf:parseType="Resource">`, i, long(i))
		}), true},
		{"rdfxml white space kept before nested nodes", RDFXML, rdfx + `<rdf:Description>` + rep(func(i int) string {
			return `<ex:p>` + strings.Repeat(" ", 200<<10) + `<rdf:Description>`
		}), true},
		{"rdfxml nested xmlns in an XML literal", RDFXML, rdfx + `<rdf:Description><ex:p rdf:parseType="Literal">` + rep(func(i int) string {
			return fmt.Sprintf(`<a%d:e xmlns:a%d="%s">`, i, i, long(i))
		}), true},
		// What is not kept does not count.
		{"turtle prefix redefined", Turtle, rep(func(i int) string { return fmt.Sprintf("@prefix p: <%s> .\n", long(i)) }), false},
		{"turtle base redefined", Turtle, rep(func(i int) string { return fmt.Sprintf("@base <%s> .\n", long(i)) }), false},
		{"turtle sibling [ ]", Turtle, "<http://example.org/s> <http://example.org/p> " + strings.TrimSuffix(rep(func(i int) string { return fmt.Sprintf("[ <%s> 1 ], ", long(i)) }), ", ") + " .", false},
		{"rdfxml sibling xmlns", RDFXML, rdfx + rep(func(i int) string {
			return fmt.Sprintf(`<rdf:Description xmlns:a%d="%s" rdf:about="http://example.org/s"><ex:p>x</ex:p></rdf:Description>`, i, long(i))
		}) + `</rdf:RDF>`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var err error
			for _, e := range Parse(strings.NewReader(tc.doc), tc.f, "http://example.org/doc") {
				if e != nil {
					err = e
				}
			}
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			if !tc.wantLimit {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			if !errors.Is(err, ErrLimit) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("err = %v, want ErrLimit (and ErrSyntax)", err)
			}
			var se *SyntaxError
			if !errors.As(err, &se) || se.Line == 0 || !strings.Contains(err.Error(), "limit exceeded") {
				t.Errorf("err = %v: want a *SyntaxError saying where the limit was exceeded", err)
			}
			// Unbounded, the 60 tokens kept and their buffers cost over
			// 24 MiB; refused at 1 MiB, a few MiB.
			if alloc > 8<<20 {
				t.Errorf("allocated %d MiB before refusing the document, want at most 8", alloc>>20)
			}
			t.Logf("%v (allocated %d KiB)", err, alloc>>10)
		})
	}
}

// TestLimitErrors: the per-token and depth limits match ErrLimit too.
func TestLimitErrors(t *testing.T) {
	tests := []struct {
		name string
		f    Format
		doc  string
	}{
		{"turtle depth", Turtle, "<http://example.org/s> <http://example.org/p> " + strings.Repeat("[ <http://example.org/p> ", turtleMaxDepth+1)},
		{"turtle collection depth", Turtle, "<http://example.org/s> <http://example.org/p> " + strings.Repeat("( ", turtleMaxDepth+1)},
		{"rdfxml depth", RDFXML, `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://example.org/"><rdf:Description>` +
			strings.Repeat(`<ex:p rdf:parseType="Resource">`, rdfxmlMaxDepth)},
		{"turtle string", Turtle, `<http://example.org/s> <http://example.org/p> "` + strings.Repeat("a", turtleMaxToken+1<<20) + `" .`},
		{"rdfxml token", RDFXML, `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://example.org/"><rdf:Description ex:a="` + strings.Repeat("a", rdfxmlMaxToken+1<<20) + `"/></rdf:RDF>`},
		{"ntriples line", NTriples, `<http://example.org/s> <http://example.org/p> "` + strings.Repeat("a", MaxNTriplesLine+1) + "\" .\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			for _, e := range Parse(strings.NewReader(tc.doc), tc.f, "") {
				if e != nil {
					err = e
				}
			}
			if !errors.Is(err, ErrLimit) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("err = %v, want ErrLimit and ErrSyntax", err)
			}
		})
	}
	// A plain syntax error is not a limit.
	for _, e := range Parse(strings.NewReader("<a> <b"), Turtle, "") {
		if errors.Is(e, ErrLimit) || !errors.Is(e, ErrSyntax) {
			t.Fatalf("err = %v, want ErrSyntax only", e)
		}
	}
}
