package harvest

import (
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/oaitest"
	"github.com/resourcesync-go/resourcesync/oai"
)

// BenchmarkHarvest100k harvests a generated repository of 100,000
// records (pages of 500) into an empty directory, and reports records
// per second beside the raw ListRecords download rate of the same
// repository.
func BenchmarkHarvest100k(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("HARVEST_BENCH_N")); err == nil && v > 0 {
		n = v // for quick comparisons
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r := newRig(b, oaitest.Options{PageSize: 500}, nil)
		r.s.Generate(n)
		raw := rawRate(b, r)
		runtime.GC()
		stop := make(chan struct{})
		peak := make(chan uint64)
		go func() {
			var m runtime.MemStats
			var p uint64
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				runtime.ReadMemStats(&m)
				p = max(p, m.HeapInuse)
				select {
				case <-stop:
					peak <- p
					return
				case <-tick.C:
				}
			}
		}()
		b.StartTimer()
		t0 := time.Now()
		st := r.harvest()
		d := time.Since(t0)
		b.StopTimer()
		close(stop)
		b.ReportMetric(float64(<-peak)/(1<<20), "peak-heap-MB")
		if st.Written != n {
			b.Fatalf("wrote %d", st.Written)
		}
		b.ReportMetric(float64(n)/d.Seconds(), "records/s")
		b.ReportMetric(raw, "raw-records/s")
		b.Logf("harvest of %d records: %v, %.0f records/s (raw ListRecords download: %.0f records/s)", n, d.Round(time.Millisecond), float64(n)/d.Seconds(), raw)
		// The re-harvest of the unchanged repository.
		r.s.Advance(time.Hour)
		t0 = time.Now()
		st = r.harvest()
		b.Logf("unchanged re-harvest (every record in the overlap granule): %v %+v", time.Since(t0).Round(time.Millisecond), st)
	}
}

// rawRate downloads the whole list without parsing, for comparison.
func rawRate(b *testing.B, r *rig) float64 {
	t0 := time.Now()
	n := 0
	q := "verb=ListRecords&metadataPrefix=" + oai.DCPrefix
	for {
		resp, err := r.cfg.Client.Get(r.s.URL + "?" + q)
		if err != nil {
			b.Fatal(err)
		}
		var tok string
		res, err := parseResponse(resp.Body, func(*item) error { n++; return nil })
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatal(err, resp.StatusCode)
		}
		tok = res.Token
		if tok == "" {
			break
		}
		q = "verb=ListRecords&resumptionToken=" + tok
	}
	return float64(n) / time.Since(t0).Seconds()
}
