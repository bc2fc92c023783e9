//go:build unix

package publish_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDumpOnDemand downloads a Resource Dump of 5,000 small files
// produced on demand, and the same dump written as files (served by
// http.FileServer), in one process: compare files/s and the CPU time per
// file (server and client) of the two, a ratio.
func BenchmarkDumpOnDemand(b *testing.B) {
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	for _, lazy := range []bool{true, false} {
		b.Run(fmt.Sprintf("ondemand=%v", lazy), func(b *testing.B) {
			out, dir := b.TempDir(), b.TempDir()
			ls := &lazyServer{out: out, files: http.FileServer(http.Dir(out))}
			srv := httptest.NewServer(ls)
			defer srv.Close()
			base := srv.URL + "/"
			st := openStore(b, "")
			const n = 5000
			for i := range n {
				apply(b, st, dir, rs.Created, fmt.Sprintf("d%02d/f%05d.txt", i%50, i), strings.Repeat(string(rune('a'+i%26)), 500+i%1000), t0)
			}
			cfg := publish.Config{BaseURL: base, Out: out, Dumps: true, DumpsOnDemand: lazy, Now: func() time.Time { return t0.Add(time.Minute) }, Logger: quiet, NoCompanions: true,
				Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "res/"}}}
			d, err := publish.NewDumps(cfg)
			if err != nil {
				b.Fatal(err)
			}
			ls.dumps.Store(d)
			ls.cfg.Store(&cfg)
			if _, err := publish.Publish(context.Background(), cfg); err != nil {
				b.Fatal(err)
			}
			_, es := docEntries(&testing.T{}, base+".resourcesync/default/resourcedump.xml")
			b.ResetTimer()
			c0 := cpuNow()
			for range b.N {
				for _, e := range es {
					resp, err := http.Get(e.Loc)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "files/s")
			b.ReportMetric(float64((cpuNow()-c0).Microseconds())/float64(n*b.N), "cpu-µs/file")
		})
	}
}
