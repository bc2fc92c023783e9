package rdf

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// benchTriples builds n triples shaped like a typical SDShare snapshot:
// resources with a handful of properties each, some literals with
// languages, datatypes and escapes, and blank-node structures.
func benchTriples(n int) []Triple {
	ts := make([]Triple, 0, n)
	preds := []Term{
		IRI("http://www.w3.org/1999/02/22-rdf-syntax-ns#type"),
		IRI("http://www.w3.org/2000/01/rdf-schema#label"),
		IRI("http://purl.org/dc/terms/modified"),
		IRI("http://psi.example.org/ontology/address"),
		IRI("http://psi.example.org/ontology/knows"),
	}
	for i := 0; len(ts) < n; i++ {
		s := IRI(fmt.Sprintf("http://psi.example.org/resource/%d", i))
		b := Blank(fmt.Sprintf("b%d", i))
		for _, tr := range []Triple{
			{s, preds[0], IRI("http://psi.example.org/ontology/Person")},
			{s, preds[1], LangLiteral(fmt.Sprintf("Person number %d", i), "en")},
			{s, preds[2], TypedLiteral("2026-11-24T00:00:00Z", "http://www.w3.org/2001/XMLSchema#dateTime")},
			{s, preds[3], b},
			{b, preds[1], Literal(fmt.Sprintf("Street \"%d\"\nTown", i))},
			{s, preds[4], IRI(fmt.Sprintf("http://psi.example.org/resource/%d", i+1))},
		} {
			if len(ts) < n {
				ts = append(ts, tr)
			}
		}
	}
	return ts
}

func benchDoc(b *testing.B, n int) []byte {
	var buf bytes.Buffer
	w := newNTriplesWriter(&buf)
	for _, t := range benchTriples(n) {
		if err := w.Write(t); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkParseNTriples parses a 100k-triple document; triples/s is the
// figure to compare with the SDShare issue's raw parse rate.
func BenchmarkParseNTriples(b *testing.B) {
	const n = 100_000
	doc := benchDoc(b, n)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		count := 0
		for _, err := range parseNTriples(bytes.NewReader(doc)) {
			if err != nil {
				b.Fatal(err)
			}
			count++
		}
		if count != n {
			b.Fatalf("parsed %d triples, want %d", count, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "triples/s")
}

// BenchmarkWriteNTriples writes the same 100k triples.
func BenchmarkWriteNTriples(b *testing.B) {
	const n = 100_000
	ts := benchTriples(n)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := newNTriplesWriter(io.Discard)
		for _, t := range ts {
			if err := w.Write(t); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "triples/s")
}
