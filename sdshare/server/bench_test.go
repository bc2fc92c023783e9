package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
