package sparql

import (
	"context"
	"fmt"
	"testing"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// BenchmarkVirtuosoLoad replaces a graph with a 5,000-triple snapshot
// (one blank node shared across it) per iteration, through the Graph
// Store Protocol.
func BenchmarkVirtuosoLoad(b *testing.B) {
	const n = 5_000
	s, _ := open(b, true)
	ctx := context.Background()
	for b.Loop() {
		if err := s.ReplaceGraph(ctx, g1, snapshot(n, nil)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "triples/s")
}

// BenchmarkVirtuosoApplyFragment applies 3-triple fragments with a blank
// node to 100 resources of a graph in turn (each replacing the last
// fragment of that resource).
func BenchmarkVirtuosoApplyFragment(b *testing.B) {
	s, _ := open(b, true)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		r := ex(fmt.Sprintf("r%d", i%100))
		ts := []rdf.Triple{
			{S: r, P: ex("name"), O: lit(fmt.Sprint("version ", i))},
			{S: r, P: ex("has"), O: bn("x")},
			{S: bn("x"), P: ex("v"), O: lit(fmt.Sprint(i))},
		}
		if err := s.ApplyFragment(ctx, g1, r, ts); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fragments/s")
}
