package s3

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourcesync-go/resourcesync/storage"
)

// benchCount reads a count from the environment (the full sizes take
// minutes on a small machine): S3BENCH_PUTS, S3BENCH_LIST.
func benchCount(b *testing.B, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q", name, v)
		}
		return n
	}
	return def
}

// run16 calls fn(i) for i in [0,n) with 16 goroutines.
func run16(n int, fn func(i int) error) error {
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					errOnce.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// BenchmarkPut: PUT of S3BENCH_PUTS (20,000) small objects (1 KiB)
// through the Target, 16 writers at a time, against the same objects PUT
// by a plain SDK client 16 at a time in the same run (the baseline).
// Reports both rates and target/baseline.
func BenchmarkPut(b *testing.B) {
	n := benchCount(b, "S3BENCH_PUTS", 20000)
	tb := newTestBucket(b)
	tg := tb.target(b, "")
	ctx := context.Background()
	data := pattern(1024, 1)
	plain := func(prefix string, n int) error {
		return run16(n, func(i int) error {
			_, err := tb.raw.PutObject(ctx, &s3.PutObjectInput{
				Bucket: aws.String(tb.name), Key: aws.String(fmt.Sprintf("%s/%06d", prefix, i)),
				Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
			})
			return err
		})
	}
	target := func(prefix string, n int) error {
		return run16(n, func(i int) error {
			w, err := tg.Create(ctx, fmt.Sprintf("%s/%06d", prefix, i), storage.PutOptions{Size: int64(len(data)), ModTime: time.Now()})
			if err != nil {
				return err
			}
			if _, err := w.Write(data); err != nil {
				return err
			}
			_, err = w.Commit(ctx)
			return err
		})
	}
	var base, ours time.Duration
	for it := 0; it < b.N; it++ {
		// In the order baseline, target, target, baseline, half the
		// objects each time: neither side gets the warm server alone.
		for j, side := range []bool{false, true, true, false} {
			start := time.Now()
			var err error
			prefix := fmt.Sprintf("r%d/%d", it, j)
			if side {
				err = target("ours/"+prefix, n/2)
				ours += time.Since(start)
			} else {
				err = plain("base/"+prefix, n/2)
				base += time.Since(start)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	total := float64(n * b.N)
	b.ReportMetric(total/base.Seconds(), "baseline-puts/s")
	b.ReportMetric(total/ours.Seconds(), "target-puts/s")
	b.ReportMetric(base.Seconds()/ours.Seconds(), "target/baseline")
}

// BenchmarkList: Content.List of S3BENCH_LIST (200,000) objects against a
// plain ListObjectsV2 loop over the same objects in the same run. The
// objects are made as files of the posix backend's bucket directory (a
// PUT each would take minutes); both listings are the server's.
func BenchmarkList(b *testing.B) {
	n := benchCount(b, "S3BENCH_LIST", 200000)
	tb := newTestBucket(b)
	root := filepath.Join(tb.srv.Root, tb.name)
	b.Cleanup(func() { os.RemoveAll(root) })
	for d := 0; d*1000 < n; d++ {
		dir := filepath.Join(root, "pre", fmt.Sprintf("d%04d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := d * 1000; i < min(n, (d+1)*1000); i++ {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("k%07d", i)), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	c := tb.content(b, "")
	ctx := context.Background()
	var base, ours time.Duration
	b.ResetTimer()
	plain := func() {
		start, seen := time.Now(), 0
		p := s3.NewListObjectsV2Paginator(tb.raw, &s3.ListObjectsV2Input{Bucket: aws.String(tb.name), Prefix: aws.String("pre/"), MaxKeys: aws.Int32(1000)})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				b.Fatal(err)
			}
			seen += len(out.Contents)
		}
		base += time.Since(start)
		if seen != n {
			b.Fatalf("baseline listed %d, want %d", seen, n)
		}
	}
	var peak uint64
	list := func() {
		start, seen := time.Now(), 0
		if err := c.List(ctx, "", func(storage.Info) error {
			seen++
			if seen%(n/10+1) == 0 {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		if seen != n {
			b.Fatalf("List listed %d, want %d", seen, n)
		}
	}
	for it := 0; it < b.N; it++ {
		// Baseline, ours, ours, baseline: neither gets the warm cache alone.
		plain()
		list()
		list()
		plain()
	}
	total := float64(2 * n * b.N) // each side lists twice an iteration
	b.ReportMetric(total/base.Seconds(), "baseline-keys/s")
	b.ReportMetric(total/ours.Seconds(), "list-keys/s")
	b.ReportMetric(ours.Seconds()/base.Seconds(), "list/baseline-time")
	// Flat in the collection: compare S3BENCH_LIST=20000 with 200000.
	b.ReportMetric(float64(peak)/(1<<20), "list-peak-heap-MiB")
}
