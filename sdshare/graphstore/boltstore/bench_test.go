package boltstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
)

// benchStores are the stores the benchmarks compare: memstore is the
// baseline the others are read against.
var benchStores = []struct {
	name string
	open func(b *testing.B) graphstore.Store
}{
	{"memstore", func(*testing.B) graphstore.Store { return memstore.New() }},
	{"boltstore", func(b *testing.B) graphstore.Store { return openBench(b, false) }},
	{"boltstore-nosync", func(b *testing.B) graphstore.Store { return openBench(b, true) }},
}

func openBench(b *testing.B, noSync bool) graphstore.Store {
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "graph.db"), &boltstore.Options{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkLoad replaces a graph with a generated snapshot of 100,000
// triples (see generated) per iteration.
func BenchmarkLoad(b *testing.B) {
	const n = 100000
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			defer s.Close()
			ctx := context.Background()
			for b.Loop() {
				if err := s.ReplaceGraph(ctx, "http://e/g", generated(n)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "triples/s")
		})
	}
}

// BenchmarkApplyFragment replaces one resource's fragment (six triples,
// two blank nodes) per iteration in a graph of 10,000 resources.
func BenchmarkApplyFragment(b *testing.B) {
	const resources = 10000
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			defer s.Close()
			ctx := context.Background()
			if err := s.ReplaceGraph(ctx, "http://e/g", generated(resources*9)); err != nil {
				b.Fatal(err)
			}
			p := rdf.IRI("http://e/p")
			i := 0
			triples := 0
			for b.Loop() {
				r := rdf.IRI(fmt.Sprint("http://example.org/collection/resource/", (i*7919)%resources))
				x, y := rdf.Blank("x"), rdf.Blank("y")
				ts := []rdf.Triple{
					{S: r, P: p, O: rdf.Literal(fmt.Sprint("version ", i))},
					{S: r, P: genPreds[3], O: rdf.IRI("http://example.org/people/1")},
					{S: r, P: genPreds[6], O: x},
					{S: x, P: p, O: rdf.Literal("part")},
					{S: x, P: genPreds[6], O: y},
					{S: y, P: p, O: rdf.LangLiteral(fmt.Sprint("deep ", i), "en")},
				}
				if err := s.ApplyFragment(ctx, "http://e/g", r, ts); err != nil {
					b.Fatal(err)
				}
				i++
				triples += len(ts)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fragments/s")
			b.ReportMetric(float64(triples)/b.Elapsed().Seconds(), "triples/s")
		})
	}
}

// benchFragment is resource k's fragment at version v: six triples, two
// blank nodes (as BenchmarkApplyFragment's).
func benchFragment(resources, i int) graphstore.Fragment {
	r := rdf.IRI(fmt.Sprint("http://example.org/collection/resource/", (i*7919)%resources))
	p := rdf.IRI("http://e/p")
	x, y := rdf.Blank("x"), rdf.Blank("y")
	return graphstore.Fragment{Resource: r, Triples: []rdf.Triple{
		{S: r, P: p, O: rdf.Literal(fmt.Sprint("version ", i))},
		{S: r, P: genPreds[3], O: rdf.IRI("http://example.org/people/1")},
		{S: r, P: genPreds[6], O: x},
		{S: x, P: p, O: rdf.Literal("part")},
		{S: x, P: genPreds[6], O: y},
		{S: y, P: p, O: rdf.LangLiteral(fmt.Sprint("deep ", i), "en")},
	}}
}

// BenchmarkApplyFragments applies pages of fragments (six triples each)
// to a graph of 10,000 resources, with fsync on commit: one
// ApplyFragment (one commit) each ("one-by-one", the baseline of the
// same run) against one ApplyFragments per page of 100 or 1,000, one by
// one and pages of 1,000 also with Options.NoFreelistSync. Read
// fragments/s as a ratio to the baseline: the machine is shared.
func BenchmarkApplyFragments(b *testing.B) {
	const resources = 10000
	for _, c := range []struct {
		name           string
		page           int
		noFreelistSync bool
	}{{"one-by-one", 0, false}, {"one-by-one-nofreelistsync", 0, true}, {"batch-100", 100, false}, {"batch-1000", 1000, false}, {"batch-1000-nofreelistsync", 1000, true}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "graph.db"), &boltstore.Options{NoFreelistSync: c.noFreelistSync})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			// Twice: the first graph's pages are free, as in a store
			// that has loaded a snapshot again.
			for range 2 {
				if err := s.ReplaceGraph(ctx, "http://e/g", generated(resources*9)); err != nil {
					b.Fatal(err)
				}
			}
			fs := make([]graphstore.Fragment, max(c.page, 1))
			i := 0
			for b.Loop() {
				for k := range fs {
					fs[k] = benchFragment(resources, i)
					i++
				}
				if c.page == 0 {
					if err := s.ApplyFragment(ctx, "http://e/g", fs[0].Resource, fs[0].Triples); err != nil {
						b.Fatal(err)
					}
					continue
				}
				if errs, err := s.ApplyFragments(ctx, "http://e/g", fs); err != nil || errs != nil {
					b.Fatal(err, errs)
				}
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "fragments/s")
		})
	}
}

// BenchmarkApplyLargeFragment applies one resource's fragment of n
// statements (a push or fragment of a resource with many values) into an
// empty graph per iteration. Cost per triple should not grow with n: put
// in arrival order, bbolt moved a node's tail on each put (O(n²): 80,000
// statements took 9.4 s, 0.6–0.8 s sorted).
func BenchmarkApplyLargeFragment(b *testing.B) {
	for _, n := range []int{10000, 80000} {
		r := rdf.IRI("http://example.org/r")
		ts := make([]rdf.Triple, n)
		for i := range ts {
			ts[i] = rdf.Triple{S: r, P: genPreds[i%len(genPreds)], O: rdf.Literal(fmt.Sprint("value ", n-i))}
		}
		for _, st := range benchStores {
			b.Run(fmt.Sprintf("%s/%d", st.name, n), func(b *testing.B) {
				s := st.open(b)
				defer s.Close()
				ctx := context.Background()
				for b.Loop() {
					if err := s.ApplyFragment(ctx, "http://e/g", r, ts); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(n*b.N), "ns/triple")
			})
		}
	}
}

// BenchmarkOpen opens and closes a store of 100,000 triples whose old
// graph was replaced (so it has free pages): the price of
// Options.NoFreelistSync is that Open walks the file to find them,
// where by default it reads the list bbolt wrote.
func BenchmarkOpen(b *testing.B) {
	for _, noFreelistSync := range []bool{false, true} {
		b.Run(map[bool]string{false: "default", true: "nofreelistsync"}[noFreelistSync], func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "graph.db")
			o := &boltstore.Options{NoSync: true, NoFreelistSync: noFreelistSync}
			s, err := boltstore.Open(path, o)
			if err != nil {
				b.Fatal(err)
			}
			for range 2 {
				if err := s.ReplaceGraph(context.Background(), "http://e/g", generated(100000)); err != nil {
					b.Fatal(err)
				}
			}
			s.Close()
			for b.Loop() {
				s, err := boltstore.Open(path, o)
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}
