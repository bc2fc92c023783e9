// Command feedsyncbench measures how fast sync consumes an IIIF Change
// Discovery feed (issue 34: 100,000 activities at ≥ 20,000 activities/s,
// objects not fetched, memory flat). A loopback server renders the pages
// of N Create activities on the fly (nothing held per activity); a child
// process runs `sync --dry-run` through package destination and reports
// its peak RSS (and the sampled peaks of its anonymous and file-backed
// parts: FEEDSYNCBENCH_SMAPS=1 also lists the mappings at the file peak),
// so that runs of 10,000, 50,000 and 100,000 activities can be compared.
// The baseline, measured in the same run, is the bare walk: the same
// pages fetched and decoded by destination/feedsync with the changes
// dropped.
//
//	go run ./bench/feedsyncbench [-n 100000] [-page 100] [-repeat 3]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/destination/feedsync"
)

func main() {
	n := flag.Int("n", 100000, "activities in the largest feed; also measured at n/10 and n/2, to show that memory is flat")
	pageSize := flag.Int("page", 100, "activities per page")
	repeat := flag.Int("repeat", 3, "runs")
	child := flag.String("consume", "", "internal: consume this feed URL into a temporary DEST (dry run) and print the seconds and peak RSS")
	flag.Parse()
	if *child != "" {
		consume(*child)
		return
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("load average: %s", load)
	for _, size := range []int{*n / 10, *n / 2, *n} {
		base, stop := serve(size, *pageSize)
		for r := 0; r < *repeat; r++ {
			walk := bareWalk(base + "/c")
			secs, rss := runChild(base + "/c")
			fmt.Printf("n=%d run %d: sync --dry-run %.0f activities/s (%.2fs; %.0f per CPU-second; peak RSS %d KiB: anon %d, file %d); bare walk %.0f activities/s; ratio sync/walk %.2f\n",
				size, r+1, float64(size)/secs, secs, float64(size)/lastCPU, rss, lastAnon, lastFile, float64(size)/walk, walk/secs)
		}
		stop()
	}
}

func bareWalk(u string) float64 {
	start := time.Now()
	get := func(ctx context.Context, u string) (feedsync.Fetched, error) {
		resp, err := http.Get(u)
		if err != nil {
			return feedsync.Fetched{}, err
		}
		return feedsync.Fetched{ReadCloser: resp.Body, URL: u, Header: resp.Header}, nil
	}
	if _, err := feedsync.Walk(context.Background(), get, u, feedsync.Options{}, func(feedsync.Change) error { return nil }); err != nil {
		fmt.Fprintln(os.Stderr, "feedbench:", err)
		os.Exit(1)
	}
	return time.Since(start).Seconds()
}

// lastCPU is the CPU time (user and system) of the last child: on a
// loaded machine, activities per CPU-second say more than per second.
var lastCPU float64

func runChild(u string) (float64, int) {
	cmd := exec.Command(os.Args[0], "-consume", u)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if cmd.ProcessState != nil {
		lastCPU = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "feedsyncbench: child:", err)
		os.Exit(1)
	}
	f := strings.Fields(string(out))
	if len(f) != 4 {
		fmt.Fprintf(os.Stderr, "feedsyncbench: child said %q\n", out)
		os.Exit(1)
	}
	secs, _ := strconv.ParseFloat(f[0], 64)
	rss, _ := strconv.Atoi(f[1])
	lastAnon, _ = strconv.Atoi(f[2])
	lastFile, _ = strconv.Atoi(f[3])
	return secs, rss
}

// lastAnon and lastFile are the last child's sampled peaks of RssAnon
// and RssFile in KiB.
var lastAnon, lastFile int

func consume(u string) {
	dest, err := os.MkdirTemp("", "feedsyncbench-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dest)
	if pf := os.Getenv("FEEDSYNCBENCH_CPUPROFILE"); pf != "" {
		f, _ := os.Create(pf)
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if os.Getenv("FEEDSYNCBENCH_MEM") != "" {
		go func() {
			peak := 0
			for {
				time.Sleep(20 * time.Millisecond)
				st, _ := os.ReadFile("/proc/self/status")
				for _, l := range strings.Split(string(st), "\n") {
					if strings.HasPrefix(l, "VmRSS:") {
						v, _ := strconv.Atoi(strings.Fields(l)[1])
						if v > peak+1000 {
							peak = v
							fmt.Fprintf(os.Stderr, "peak so far: %s\n", strings.Join(strings.Fields(strings.ReplaceAll(string(st), "\n", " ")), " ")[0:0]+grep(st))
						}
					}
				}
			}
		}()
	}
	if pf := os.Getenv("FEEDSYNCBENCH_HEAPPROFILE"); pf != "" {
		go func() {
			var peak uint64
			for {
				time.Sleep(50 * time.Millisecond)
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak {
					peak = ms.HeapInuse
					f, _ := os.Create(pf)
					pprof.WriteHeapProfile(f)
					f.Close()
				}
			}
		}()
	}
	peaks := samplePeaks()
	start := time.Now()
	rep, err := destination.Sync(context.Background(), u, destination.Options{Dest: dest, Client: http.DefaultClient, DryRun: true,
		Events: func(e destination.Event) { lastEvent.Store(e.Kind + " " + e.Message) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "feedbench:", err)
		os.Exit(1)
	}
	secs := time.Since(start).Seconds()
	_ = rep
	if os.Getenv("FEEDSYNCBENCH_MEM") != "" {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		st, _ := os.ReadFile("/proc/self/status")
		fmt.Fprintf(os.Stderr, "Go Sys %d KiB, HeapSys %d KiB, NumGC %d\n%s", ms.Sys>>10, ms.HeapSys>>10, ms.NumGC, st)
	}
	anon, file := peaks()
	if peakMaps != "" {
		fmt.Fprint(os.Stderr, "at the peak of RssFile:\n"+peakMaps)
	}
	fmt.Println(secs, peakRSS(), anon, file)
}

// samplePeaks samples RssAnon and RssFile of /proc/self/status every
// 10 ms until the returned func is called, which gives their peaks in
// KiB (zeros where /proc does not tell): VmHWM alone does not say
// whether a peak is heap or mapped file pages (the spool's bbolt map).
func samplePeaks() func() (anon, file int) {
	var anon, file int
	done := make(chan struct{})
	stopped := make(chan struct{})
	sample := func() {
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return
		}
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			v, _ := strconv.Atoi(f[1])
			switch f[0] {
			case "RssAnon:":
				anon = max(anon, v)
			case "RssFile:":
				if v > file && os.Getenv("FEEDSYNCBENCH_SMAPS") != "" {
					peakMaps = fmt.Sprintf("  during %v\n", lastEvent.Load()) + mapsRSS()
				}
				file = max(file, v)
			}
		}
	}
	go func() {
		defer close(stopped)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				sample()
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return func() (int, int) {
		close(done)
		<-stopped
		return anon, file
	}
}

// peakRSS is VmHWM in KiB where /proc tells it, else 0.
func peakRSS() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			v, _ := strconv.Atoi(strings.Fields(l)[1])
			return v
		}
	}
	return 0
}

// serve renders the feed: activity i creates /o/i at t0+i ms.
func serve(n, pageSize int) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	base := "http://" + ln.Addr().String()
	pages := (n + pageSize - 1) / pageSize
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", `application/ld+json;profile="https://www.w3.org/ns/activitystreams"`)
		if r.URL.Path == "/c" {
			json.NewEncoder(w).Encode(map[string]any{"type": "OrderedCollection", "id": base + "/c", "totalItems": n,
				"last": map[string]string{"id": fmt.Sprintf("%s/p/%d", base, pages-1)}})
			return
		}
		p, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		if err != nil || p < 0 || p >= pages {
			http.NotFound(w, r)
			return
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"type":"OrderedCollectionPage","id":"%s/p/%d","partOf":{"id":"%s/c"},`, base, p, base)
		if p > 0 {
			fmt.Fprintf(&b, `"prev":{"id":"%s/p/%d"},`, base, p-1)
		}
		b.WriteString(`"orderedItems":[`)
		for i := p * pageSize; i < min((p+1)*pageSize, n); i++ {
			if i > p*pageSize {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"type":"Create","object":{"id":"%s/o/%d","type":"Manifest"},"endTime":"%s"}`, base, i, t0.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano))
		}
		b.WriteString("]}")
		w.Write(b.Bytes())
	})}
	go srv.Serve(ln)
	return base, func() { srv.Close() }
}

func grep(st []byte) string {
	var out []string
	for _, l := range strings.Split(string(st), "\n") {
		if strings.HasPrefix(l, "Rss") {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(out, "; ")
}

// lastEvent is the kind and message of the last event of the run.
var lastEvent atomic.Value

// peakMaps is mapsRSS at the last peak of RssFile (FEEDSYNCBENCH_SMAPS).
var peakMaps string

// mapsRSS lists the mappings of /proc/self/smaps with over 512 KiB
// resident, with their Rss in KiB.
func mapsRSS() string {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return ""
	}
	rss := map[string]int{}
	name := ""
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			name = "[anon]"
			if len(f) >= 6 {
				name = f[5]
			}
			continue
		}
		if len(f) >= 2 && f[0] == "Rss:" {
			v, _ := strconv.Atoi(f[1])
			rss[name] += v
		}
	}
	var out strings.Builder
	for k, v := range rss {
		if v > 512 {
			fmt.Fprintf(&out, "  %8d %s\n", v, k)
		}
	}
	return out.String()
}
