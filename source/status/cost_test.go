package status

import (
	"context"
	"net/http/httptest"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/source/store/pgstore"
)

// TestCost200k measures the page on a 200,000-resource set with 400,000
// journal records (bolt): the first request (which starts the size pass),
// the pass, and requests that recompute every figure (MaxAge 1ns) but the
// size. Run with STATUSCOST=1 -v (STATUSCOST=pg: on PostgreSQL).
func TestCost200k(t *testing.T) {
	if os.Getenv("STATUSCOST") == "" {
		t.Skip("set STATUSCOST=1")
	}
	now := time.Date(2026, 11, 25, 12, 30, 0, 0, time.UTC)
	st := &counting{Store: openBolt(t)}
	if os.Getenv("STATUSCOST") == "pg" {
		pg, err := pgstore.Open(context.Background(), pgtest.Database(t), "s", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer pg.Close()
		st = &counting{Store: pg}
	}
	t0 := time.Now()
	seed(t, st.Store, 200000, 400000, now)
	t.Logf("seeded in %v", time.Since(t0).Round(time.Millisecond))
	h := New(Config{BaseURL: "http://src.test/", Sets: []Set{{Name: "s", Store: st}}, Now: func() time.Time { return now },
		MaxAge: time.Nanosecond, Wait: time.Minute, BytesInterval: time.Hour})
	defer h.Close()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap0 := ms.HeapAlloc

	t0 = time.Now()
	get(t, h) // waits for the size pass too
	first := time.Since(t0)
	const n = 200
	runtime.ReadMemStats(&ms)
	alloc0 := ms.TotalAlloc
	j0 := st.journal.Load()
	t0 = time.Now()
	for range n {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	}
	per := time.Since(t0) / n
	runtime.ReadMemStats(&ms)
	allocPer := (ms.TotalAlloc - alloc0) / n
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("first request (with the size pass over 200k resources): %v; then %v per request (every figure but the size recomputed), %d KiB allocated and %d journal records read per request; heap in use %d KiB before the page, %d KiB after (handler alive)",
		first.Round(time.Millisecond), per.Round(10*time.Microsecond), allocPer>>10, (st.journal.Load()-j0)/n, heap0>>10, ms.HeapAlloc>>10)
	runtime.KeepAlive(h)
	h2 := New(Config{BaseURL: "http://src.test/", Sets: []Set{{Name: "s", Store: st}}, Now: func() time.Time { return now }, Wait: time.Minute})
	defer h2.Close()
	get(t, h2)
	t0 = time.Now()
	for range n {
		rec := httptest.NewRecorder()
		h2.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	}
	t.Logf("with the default MaxAge (5s, figures reused): %v per request", (time.Since(t0) / n).Round(10*time.Microsecond))
}
