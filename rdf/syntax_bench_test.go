package rdf

import (
	"bytes"
	"fmt"
	"io"
	"iter"
	"testing"
)

// syntaxBenchTriples makes n triples shaped like an SDShare snapshot: resources
// with a type, a label, a language-tagged title, a typed number, a link
// and a blank node.
func syntaxBenchTriples(n int) []Triple {
	ts := make([]Triple, 0, n)
	for i := 0; len(ts) < n; i++ {
		s := IRI(fmt.Sprintf("http://example.org/resource/%d", i))
		b := Blank(fmt.Sprintf("addr%d", i))
		ts = append(ts,
			Triple{s, rdfType, IRI("http://xmlns.com/foaf/0.1/Person")},
			Triple{s, IRI("http://www.w3.org/2000/01/rdf-schema#label"), Literal(fmt.Sprintf("Person number %d, \"quoted\"", i))},
			Triple{s, IRI("http://purl.org/dc/terms/title"), LangLiteral(fmt.Sprintf("Titel %d", i), "de")},
			Triple{s, IRI("http://example.org/vocab#age"), TypedLiteral(fmt.Sprint(i%100), XSDInteger)},
			Triple{s, IRI("http://xmlns.com/foaf/0.1/knows"), IRI(fmt.Sprintf("http://example.org/resource/%d", i+1))},
			Triple{s, IRI("http://example.org/vocab#address"), b},
			Triple{b, IRI("http://example.org/vocab#city"), Literal("Oslo")},
		)
	}
	return ts[:n]
}

func syntaxBenchDoc(b *testing.B, ts []Triple, newW func(io.Writer) Writer) []byte {
	var buf bytes.Buffer
	w := newW(&buf)
	for _, t := range ts {
		if err := w.Write(t); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

func benchParse(b *testing.B, doc []byte, want int, parse func(io.Reader, string) iter.Seq2[Triple, error]) {
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		n := 0
		for _, err := range parse(bytes.NewReader(doc), "") {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != want {
			b.Fatalf("parsed %d triples, want %d", n, want)
		}
	}
	b.ReportMetric(float64(want)*float64(b.N)/b.Elapsed().Seconds(), "triples/s")
}

const benchN = 100_000

func BenchmarkParseTurtle(b *testing.B) {
	ts := syntaxBenchTriples(benchN)
	benchParse(b, syntaxBenchDoc(b, ts, newTurtleWriter), len(ts), parseTurtle)
}

func BenchmarkParseRDFXML(b *testing.B) {
	ts := syntaxBenchTriples(benchN)
	benchParse(b, syntaxBenchDoc(b, ts, newRDFXMLWriter), len(ts), parseRDFXML)
}

func benchWrite(b *testing.B, newW func(io.Writer) Writer) {
	ts := syntaxBenchTriples(benchN)
	b.ReportAllocs()
	for b.Loop() {
		w := newW(io.Discard)
		for _, t := range ts {
			if err := w.Write(t); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(ts))*float64(b.N)/b.Elapsed().Seconds(), "triples/s")
}

func BenchmarkWriteTurtle(b *testing.B) { benchWrite(b, newTurtleWriter) }
func BenchmarkWriteRDFXML(b *testing.B) { benchWrite(b, newRDFXMLWriter) }
