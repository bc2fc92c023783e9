package rdf

import (
	"fmt"
	"io"
	"iter"
	"strings"
	"testing"
)

// collectSeq reads all triples; on error it returns those before it.
func collectSeq(seq iter.Seq2[Triple, error]) ([]Triple, error) {
	var ts []Triple
	for t, err := range seq {
		if err != nil {
			return ts, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

func mustTurtle(t testing.TB, doc, base string) []Triple {
	t.Helper()
	ts, err := collectSeq(parseTurtle(strings.NewReader(doc), base))
	if err != nil {
		t.Fatalf("parse turtle: %v\n%s", err, doc)
	}
	return ts
}

func dump(ts []Triple) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "%v %v %v\n", t.S, t.P, t.O)
	}
	return b.String()
}

// roundTrip writes ts with w and reads them back with parse.
func roundTrip(t testing.TB, ts []Triple, newW func(io.Writer) Writer, parse func(io.Reader, string) iter.Seq2[Triple, error]) ([]Triple, string) {
	t.Helper()
	var buf strings.Builder
	w := newW(&buf)
	for _, tr := range ts {
		if err := w.Write(tr); err != nil {
			t.Fatalf("write %v: %v", tr, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	back, err := collectSeq(parse(strings.NewReader(buf.String()), ""))
	if err != nil {
		t.Fatalf("re-parse: %v\n%s", err, buf.String())
	}
	return back, buf.String()
}
