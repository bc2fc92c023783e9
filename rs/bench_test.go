package rs

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strconv"
	"testing"
	"time"
)

func benchHead() *Head {
	return &Head{
		MD:    Metadata{Capability: CapResourceList, At: NewTime(time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC))},
		Links: []Link{{Rel: RelUp, Href: "https://example.com/dataset1/capabilitylist.xml"}},
	}
}

// benchEntries returns n Resource List entries with loc, lastmod, md5 and
// sha-256 hashes, length and type.
func benchEntries(n int) []Entry {
	es := make([]Entry, n)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range es {
		name := "https://example.com/dataset1/resources/" + strconv.Itoa(i) + ".html"
		m := md5.Sum([]byte(name))
		s := sha256.Sum256([]byte(name))
		es[i] = Entry{
			Loc:     name,
			LastMod: NewTime(base.Add(time.Duration(i) * time.Second)),
			MD: Metadata{
				Hashes:    Hashes{{MD5, hex.EncodeToString(m[:])}, {SHA256, hex.EncodeToString(s[:])}},
				Length:    int64(1000 + i%100000),
				HasLength: true,
				Type:      "text/html",
			},
		}
	}
	return es
}

// countWriter discards what it is given and counts it.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

func benchEncode(b *testing.B, n int) {
	distinct := min(n, 50000)
	entries := benchEntries(distinct)
	h := benchHead()
	encode := func(w io.Writer) {
		enc := NewEncoder(w)
		if err := enc.WriteHead(h); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if err := enc.WriteEntry(&entries[i%distinct]); err != nil {
				b.Fatal(err)
			}
		}
		if err := enc.Close(); err != nil {
			b.Fatal(err)
		}
	}
	var cw countWriter
	encode(&cw)
	b.SetBytes(cw.n)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		encode(io.Discard)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkEncode50k writes a 50,000-entry Resource List.
func BenchmarkEncode50k(b *testing.B) { benchEncode(b, 50000) }

// BenchmarkEncode1M writes a 1,000,000-entry Resource List (50,000
// distinct entries, each written 20 times).
func BenchmarkEncode1M(b *testing.B) { benchEncode(b, 1000000) }

type discardCloser struct{}

func (discardCloser) Write(p []byte) (int, error) { return len(p), nil }
func (discardCloser) Close() error                { return nil }

// BenchmarkSplit1M splits a 1,000,000-entry Resource List into parts of
// 50,000 (spooled through a temporary file) and writes the index.
func BenchmarkSplit1M(b *testing.B) {
	const n = 1000000
	entries := benchEntries(50000)
	b.ReportAllocs()
	for b.Loop() {
		s, err := NewSplitter(SplitConfig{
			Head:    *benchHead(),
			URL:     "https://example.com/dataset1/resourcelist.xml",
			Create:  func(string) (io.WriteCloser, error) { return discardCloser{}, nil },
			TempDir: b.TempDir(),
		})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if err := s.Add(&entries[i%len(entries)]); err != nil {
				b.Fatal(err)
			}
		}
		if res, err := s.Close(); err != nil || res.Parts != 20 {
			b.Fatal(res, err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
