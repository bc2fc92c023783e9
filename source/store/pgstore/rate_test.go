package pgstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

// baselineBatch is the scanner's baseline batch size (scan.Options.BatchSize).
const baselineBatch = 10000

func path(i int) string { return fmt.Sprintf("d%03d/sub/file-%07d.txt", i/1000, i) }

// loadBaseline applies n created changes in batches of baselineBatch, in
// path order, as the scanner's first scan does, and returns the rate.
func loadBaseline(t testing.TB, s store.Store, n int) float64 {
	ctx := context.Background()
	start := time.Now()
	for i := 0; i < n; i += baselineBatch {
		cs := make([]store.Change, 0, baselineBatch)
		for k := i; k < min(n, i+baselineBatch); k++ {
			cs = append(cs, store.Change{Kind: rs.Created, Time: storetest.T0, Resource: storetest.Res(path(k), path(k))})
		}
		b := store.Batch{Baseline: true, Changes: cs}
		if i+baselineBatch >= n {
			b.Meta = map[string][]byte{store.MetaBaseline: store.FormatBaseline(storetest.T0)}
		}
		if _, _, err := s.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

// TestRates loads a baseline into PostgreSQL (COPY) and into bolt, then
// reads it back the ways a rescan and a server do, and logs the rates of
// both side by side (go test -v -run Rates).
func TestRates(t *testing.T) {
	pgtest.Skip(t)
	n := 100000
	if testing.Short() {
		n = 10000
	}
	ctx := context.Background()
	pg := open(t, pgtest.Database(t), "")
	bdb, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	for _, tc := range []struct {
		name string
		s    store.Store
	}{{"pgstore", pg}, {"bolt", bdb}} {
		load := loadBaseline(t, tc.s, n)
		start := time.Now()
		k := 0
		for r, err := range tc.s.ResourcesIn(ctx, "", "") {
			if err != nil {
				t.Fatal(err)
			}
			if r.Path != path(k) {
				t.Fatalf("%s: record %d is %q, want %q", tc.name, k, r.Path, path(k))
			}
			k++
		}
		if k != n {
			t.Fatalf("%s: ResourcesIn yielded %d, want %d", tc.name, k, n)
		}
		scan := float64(n) / time.Since(start).Seconds()
		start = time.Now()
		k = 0
		for _, err := range tc.s.Resources(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			k++
		}
		if k != n {
			t.Fatalf("%s: Resources yielded %d, want %d", tc.name, k, n)
		}
		snap := float64(n) / time.Since(start).Seconds()
		const gets = 2000
		start = time.Now()
		for i := range gets {
			if _, err := tc.s.Get(ctx, path(i*7919%n)); err != nil {
				t.Fatal(err)
			}
		}
		get := gets / time.Since(start).Seconds()
		// A rescan's batch: 128 updates at scattered paths, journaled.
		start = time.Now()
		const batches = 20
		for j := range batches {
			cs := make([]store.Change, 0, 128)
			for i := range 128 {
				p := path((j*128 + i) * 37 % n)
				cs = append(cs, store.Change{Kind: rs.Updated, Time: storetest.T0.Add(time.Second), Resource: storetest.Res(p, fmt.Sprint(j))})
			}
			slicesSortChanges(cs)
			if _, _, err := tc.s.Apply(ctx, store.Batch{Changes: cs}); err != nil {
				t.Fatal(err)
			}
		}
		upd := float64(batches*128) / time.Since(start).Seconds()
		t.Logf("%-8s %d resources: baseline load %8.0f rows/s | ResourcesIn %8.0f rows/s | Resources %8.0f rows/s | Get %6.0f/s | 128-change batches %6.0f changes/s",
			tc.name, n, load, scan, snap, get, upd)
	}
}

func slicesSortChanges(cs []store.Change) {
	slices.SortFunc(cs, func(a, b store.Change) int { return strings.Compare(a.Resource.Path, b.Resource.Path) })
}

// BenchmarkBaseline loads a 100,000-resource baseline in the scanner's
// batches into PostgreSQL (COPY) and into bolt:
//
//	go test -run '^$' -bench Baseline -benchtime 3x ./source/store/pgstore/
func BenchmarkBaseline(b *testing.B) {
	pgtest.Skip(b)
	const n = 100000
	b.Run("pgstore", func(b *testing.B) {
		u := pgtest.Database(b)
		iters := 0
		for b.Loop() {
			s := open(b, u, fmt.Sprint("bench", iters))
			loadBaseline(b, s, n)
			s.Close()
			iters++
		}
		b.ReportMetric(float64(n*iters)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("bolt", func(b *testing.B) {
		dir := b.TempDir()
		iters := 0
		for b.Loop() {
			s, err := bolt.Open(filepath.Join(dir, fmt.Sprint(iters)), nil)
			if err != nil {
				b.Fatal(err)
			}
			loadBaseline(b, s, n)
			s.Close()
			iters++
		}
		b.ReportMetric(float64(n*iters)/b.Elapsed().Seconds(), "rows/s")
	})
}

// BenchmarkGet looks up random resources of a 100,000-resource inventory
// from parallel goroutines (what a server does per request):
//
//	go test -run '^$' -bench Get -cpu 1,4,16 ./source/store/pgstore/
func BenchmarkGet(b *testing.B) {
	pgtest.Skip(b)
	const n = 100000
	pg := open(b, pgtest.Database(b), "")
	loadBaseline(b, pg, n)
	bdb, err := bolt.Open(filepath.Join(b.TempDir(), "state.db"), &bolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer bdb.Close()
	loadBaseline(b, bdb, n)
	for _, tc := range []struct {
		name string
		s    store.Store
	}{{"pgstore", pg}, {"bolt", bdb}} {
		b.Run(tc.name, func(b *testing.B) {
			var seed atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				i := int(seed.Add(7919))
				for pb.Next() {
					i = (i + 104729) % n
					if _, err := tc.s.Get(context.Background(), path(i)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
