// Command sourcebench measures the Source end to end on many small files,
// beside baselines measured in the same run:
//
//	go run ./bench/sourcebench -n 100000 -size 1024
//
// It prints
//   - the time of `find DIR -type f -print0 | xargs -0 -P2 md5sum` over the
//     files (the baseline), and of the first update of a Source (scan with
//     md5 + sha-256 + media type, journal and inventory commits, then every
//     document published), with the ratio of the two rates;
//   - the rate of an update that finds every file unchanged (a rescan);
//   - 64 concurrent clients on loopback fetching resources and documents
//     for -duration: requests/s, p50/p99 latency and errors;
//   - the peak RSS of the process.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/scan"
)

func main() {
	n := flag.Int("n", 100000, "number of files")
	size := flag.Int("size", 1024, "bytes per file")
	clients := flag.Int("clients", 64, "concurrent HTTP clients")
	duration := flag.Duration("duration", 5*time.Second, "length of the HTTP load")
	dumps := flag.Bool("dumps", false, "also write the Resource Dump during the first update")
	flag.Parse()
	if err := run(*n, *size, *clients, *duration, *dumps); err != nil {
		log.Fatal(err)
	}
}

func run(n, size, clients int, duration time.Duration, dumps bool) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "sourcebench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "collection")
	fmt.Printf("creating %d files of %d bytes...\n", n, size)
	paths := make([]string, 0, n)
	buf := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i++ {
		rel := fmt.Sprintf("%03d/%07d.txt", i%1000, i)
		p := filepath.Join(dir, rel)
		if i < 1000 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
		}
		for k := range buf {
			buf[k] = byte('a' + rng.IntN(26))
		}
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			return err
		}
		paths = append(paths, rel)
	}

	t0 := time.Now()
	cmd := exec.Command("sh", "-c", `find "$1" -type f -print0 | xargs -0 -P2 md5sum >/dev/null`, "sh", dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("md5sum baseline: %w", err)
	}
	md5sum := time.Since(t0)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String() + "/"
	src, err := source.Open(source.Config{
		BaseURL: base, Sets: []source.SetConfig{{Name: "default", Dir: dir}}, StateDir: filepath.Join(tmp, "state"),
		Dumps: dumps, Archives: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	defer src.Close()
	t0 = time.Now()
	if _, err := src.Update(ctx); err != nil {
		return err
	}
	first := time.Since(t0)
	rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
	fmt.Printf("baseline  find | xargs -P2 md5sum: %8v  %9.0f files/s\n", md5sum.Round(time.Millisecond), rate(md5sum))
	fmt.Printf("publish   scan (md5+sha-256) + documents: %8v  %9.0f files/s  ratio %.2fx (target >= 0.80x)\n",
		first.Round(time.Millisecond), rate(first), rate(first)/rate(md5sum))

	var rescans, updates []time.Duration
	for i := 0; i < 3; i++ {
		t0 = time.Now()
		scans, err := src.Scan(ctx)
		if err != nil {
			return err
		}
		if s := scans["default"]; s.Created+s.Updated+s.Deleted != 0 {
			return fmt.Errorf("unchanged rescan found changes: %+v", s)
		}
		rescans = append(rescans, time.Since(t0))
		t0 = time.Now()
		if _, err := src.Update(ctx); err != nil {
			return err
		}
		updates = append(updates, time.Since(t0))
	}
	slices.Sort(rescans)
	slices.Sort(updates)
	fmt.Printf("rescan    unchanged files (median of 3): %8v  %9.0f files/s (target >= 200000)\n",
		rescans[1].Round(time.Millisecond), rate(rescans[1]))
	fmt.Printf("update    unchanged rescan + publish with nothing new (median of 3): %v\n", updates[1].Round(time.Millisecond))

	srv := &http.Server{Handler: src.Handler(nil)}
	go srv.Serve(ln)
	defer srv.Close()
	docs := []string{".well-known/resourcesync", ".resourcesync/default/capabilitylist.xml", ".resourcesync/default/changelist.xml", "robots.txt"}
	tr := &http.Transport{MaxIdleConnsPerHost: clients, DialContext: (&net.Dialer{}).DialContext}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var reqs, errs atomic.Int64
	lat := make([][]time.Duration, clients)
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 7))
			for time.Now().Before(deadline) {
				u := base + scan.EscapePath(paths[r.IntN(len(paths))])
				if r.IntN(10) == 0 {
					u = base + docs[r.IntN(len(docs))]
				}
				t := time.Now()
				resp, err := client.Get(u)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				lat[c] = append(lat[c], time.Since(t))
				reqs.Add(1)
				if err != nil {
					errs.Add(1)
				}
			}
		}(c)
	}
	wg.Wait()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	p := func(q float64) time.Duration { return all[int(q*float64(len(all)-1))] }
	fmt.Printf("serve     %d clients, %v: %d requests, %.0f req/s, p50 %v, p99 %v, errors %d (90%% resources, 10%% documents)\n",
		clients, duration, reqs.Load(), float64(reqs.Load())/duration.Seconds(), p(0.5).Round(time.Microsecond), p(0.99).Round(time.Microsecond), errs.Load())
	fmt.Printf("peak RSS  %s\n", vmHWM())
	return nil
}

func vmHWM() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
