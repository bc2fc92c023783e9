package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rdf"
)

func genData(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "<http://ex/r%d> <http://www.w3.org/2000/01/rdf-schema#label> \"Resource %d\" .\n", i, i)
		fmt.Fprintf(&b, "<http://ex/r%d> <http://ex/p> <http://ex/r%d> .\n", i, (i*7)%n)
		fmt.Fprintf(&b, "<http://ex/r%d> <http://ex/b> _:b%d .\n_:b%d <http://ex/q> \"%d\" .\n_:b%d <http://ex/v> \"x%d\" .\n", i, i, i, i, i, i)
	}
	return b.String()
}

// BenchmarkLoad: the first load (baseline) and a reload of an unchanged
// graph, 5 triples per resource; reports triples/s.
func BenchmarkLoad(b *testing.B) {
	const n = 20000
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "d.nt"), []byte(genData(n)), 0o644)
	data := genData(n)
	for b.Loop() {
		b.StopTimer()
		// The baseline of the same run: parsing alone.
		start := time.Now()
		for _, err := range rdf.Parse(strings.NewReader(data), rdf.NTriples, "") {
			if err != nil {
				b.Fatal(err)
			}
		}
		parse := time.Since(start)
		state := b.TempDir()
		b.StartTimer()
		start = time.Now()
		s, err := Open(context.Background(), Config{BaseURL: "http://127.0.0.1/", StateDir: state, NoSync: true,
			Collections: []CollectionConfig{{Name: "c", Path: dir}}})
		if err != nil {
			b.Fatal(err)
		}
		first := time.Since(start)
		start = time.Now()
		if _, err := s.Collection("c").Load(context.Background(), true); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(5*n)/first.Seconds(), "baseline-triples/s")
		reload := time.Since(start)
		b.ReportMetric(float64(5*n)/reload.Seconds(), "reload-triples/s")
		b.ReportMetric(reload.Seconds()/parse.Seconds(), "reload/parse")
		s.Close()
	}
}

// BenchmarkFragmentBlank: GET of a fragment reaching 64k blank nodes in
// cycles (16384 cycles of 4). "served" is the server's path (the form
// labelled at load); "labelled-per-GET" is what each GET did before the
// form was kept (issue 24 item 12).
func BenchmarkFragmentBlank(b *testing.B) {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "d.nt"), []byte(cycleDoc("c", 16384, 4, "1")), 0o644)
	s, err := Open(context.Background(), Config{BaseURL: "http://127.0.0.1/", StateDir: b.TempDir(), NoSync: true,
		Collections: []CollectionConfig{{Name: "c", Path: dir}}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := s.Collection("c")
	want, _ := c.fragment(cycleRes, rdf.NTriples)
	b.Run("served", func(b *testing.B) {
		for b.Loop() {
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/c/fragment?resource="+url.QueryEscape(cycleRes), nil))
			if !bytes.Equal(rec.Body.Bytes(), want) {
				b.Fatal("other bytes")
			}
		}
	})
	b.Run("labelled-per-GET", func(b *testing.B) {
		for b.Loop() {
			fts, _ := c.version().gf.fragment(rdf.IRI(cycleRes))
			if _, nt := canonical(fts); !bytes.Equal(nt, want) {
				b.Fatal("other bytes")
			}
		}
	})
}

// BenchmarkFragmentMemory reports the heap of a loaded collection of
// about 100k triples and the part of it the kept fragments take: 20k
// resources each with two blank nodes (cheap to label: none kept), and
// one resource reaching 25k blank cycles of 4 (kept).
func BenchmarkFragmentMemory(b *testing.B) {
	for _, tc := range []struct{ name, doc string }{
		{"small-fragments", genData(20000)},
		{"one-cyclic-fragment", cycleDoc("c", 25000, 4, "1")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			os.WriteFile(filepath.Join(dir, "d.nt"), []byte(tc.doc), 0o644)
			for b.Loop() {
				fragmentMemory(b, dir)
			}
		})
	}
}

func fragmentMemory(b *testing.B, dir string) {
	heap := func() float64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapAlloc) / (1 << 20)
	}
	base := heap()
	s, err := Open(context.Background(), Config{BaseURL: "http://127.0.0.1/", StateDir: b.TempDir(), NoSync: true,
		Collections: []CollectionConfig{{Name: "c", Path: dir}}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := s.Collection("c")
	with := heap() - base
	v := c.version()
	n, kept := len(v.kept), int64(0)
	for _, k := range v.kept {
		kept += k.n // on disk (the kept file), not in the heap
	}
	b.ReportMetric(float64(v.gf.triples), "triples")
	b.ReportMetric(with, "heap-MB")
	b.ReportMetric(float64(kept)/(1<<20), "kept-nt-MB")
	b.ReportMetric(float64(n), "kept-fragments")
}

// openData is 150,000 triples (10,000 resources of 15, one blank node
// each) in big.nt and one resource in small.nt.
func openData(b *testing.B) string {
	dir := b.TempDir()
	var sb strings.Builder
	for r := range 10000 {
		for p := range 13 {
			fmt.Fprintf(&sb, "<http://ex/r%d> <http://ex/p%d> \"value %d of resource %d\" .\n", r, p, p, r)
		}
		fmt.Fprintf(&sb, "<http://ex/r%d> <http://ex/address> _:a%d .\n_:a%d <http://ex/city> \"city %d\" .\n", r, r, r, r%100)
	}
	os.WriteFile(filepath.Join(dir, "big.nt"), []byte(sb.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "small.nt"), []byte("<http://ex/small> <http://ex/v> \"0\" .\n"), 0o644)
	return dir
}

// BenchmarkOpen opens openData from a new state: the sort, the graph
// file, the baseline.
func BenchmarkOpen(b *testing.B) {
	dir := openData(b)
	for b.Loop() {
		s, err := Open(context.Background(), Config{BaseURL: "http://127.0.0.1/", StateDir: b.TempDir(), NoSync: true,
			Collections: []CollectionConfig{{Name: "c", Path: dir}}})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkReloadOne reloads openData after a change of small.nt (one
// resource).
func BenchmarkReloadOne(b *testing.B) {
	dir := openData(b)
	s, err := Open(context.Background(), Config{BaseURL: "http://127.0.0.1/", StateDir: b.TempDir(), NoSync: true,
		Collections: []CollectionConfig{{Name: "c", Path: dir}}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := s.Collection("c")
	i := 0
	for b.Loop() {
		i++
		os.WriteFile(filepath.Join(dir, "small.nt"), []byte(fmt.Sprintf("<http://ex/small> <http://ex/v> \"%d\" .\n", i)), 0o644)
		rep, err := c.Load(context.Background(), false)
		if err != nil || rep.Updated != 1 || rep.Created+rep.Deleted != 0 {
			b.Fatalf("%+v %v", rep, err)
		}
	}
}
