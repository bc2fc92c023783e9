package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

func TestBig(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("PGSTORE_BIG"))
	if n == 0 {
		t.Skip("PGSTORE_BIG=N")
	}
	pgtest.Skip(t)
	ctx := context.Background()
	s := open(t, pgtest.Database(t), "")
	start := time.Now()
	rate := loadBaseline(t, s, n)
	t.Logf("load %d: %v, %.0f rows/s", n, time.Since(start), rate)
	for pass := range 2 {
		start = time.Now()
		k := 0
		for _, err := range s.ResourcesIn(ctx, "", "") {
			if err != nil {
				t.Fatal(err)
			}
			k++
		}
		t.Logf("ResourcesIn pass %d: %d in %v", pass, k, time.Since(start))
	}
	start = time.Now()
	for i := range 5000 {
		if _, err := s.Get(ctx, path(i*7919%n)); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("5000 Gets: %v", time.Since(start))
	start = time.Now()
	for j := range 50 {
		cs := make([]store.Change, 0, 128)
		for i := range 128 {
			p := path((j*128 + i) * 37 % n)
			cs = append(cs, store.Change{Kind: rs.Updated, Time: storetest.T0.Add(time.Second), Resource: storetest.Res(p, fmt.Sprint(j))})
		}
		slicesSortChanges(cs)
		if _, _, err := s.Apply(ctx, store.Batch{Changes: cs}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("50 batches of 128 updates: %v", time.Since(start))
	var size string
	s.Pool().QueryRow(ctx, `SELECT pg_size_pretty(pg_total_relation_size('rs_inventory'))`).Scan(&size)
	t.Logf("rs_inventory: %s", size)
}
