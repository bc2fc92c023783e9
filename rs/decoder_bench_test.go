package rs

import (
	"bytes"
	"encoding/xml"
	"io"
	"testing"
)

func genBytes(tb testing.TB, n int) []byte {
	b, err := io.ReadAll(newGenReader(n))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func decodeAll(tb testing.TB, r io.Reader) int {
	d := NewDecoder(r)
	if _, err := d.Head(); err != nil {
		tb.Fatal(err)
	}
	var e Entry
	n := 0
	for {
		err := d.NextInto(&e)
		if err == io.EOF {
			return n
		}
		if err != nil {
			tb.Fatal(err)
		}
		n++
	}
}

// BenchmarkDecode50k parses a generated 50,000-entry Resource List.
func BenchmarkDecode50k(b *testing.B) {
	doc := genBytes(b, 50000)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n := decodeAll(b, bytes.NewReader(doc)); n != 50000 {
			b.Fatalf("decoded %d entries", n)
		}
	}
	b.ReportMetric(float64(50000*b.N)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkDecode50kEncodingXML is the baseline: encoding/xml token
// streaming over the same document, measured in the same run.
func BenchmarkDecode50kEncodingXML(b *testing.B) {
	doc := genBytes(b, 50000)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dec := xml.NewDecoder(bytes.NewReader(doc))
		n := 0
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "url" {
				n++
			}
		}
		if n != 50000 {
			b.Fatalf("counted %d entries", n)
		}
	}
	b.ReportMetric(float64(50000*b.N)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkDecodeStream1M streams 1,000,000 generated entries through the
// decoder; generation is part of the measured time.
func BenchmarkDecodeStream1M(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if n := decodeAll(b, newGenReader(1000000)); n != 1000000 {
			b.Fatalf("decoded %d entries", n)
		}
	}
	b.ReportMetric(float64(1000000*b.N)/b.Elapsed().Seconds(), "entries/s")
}
