package destination

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// memFeed serves an IIIF Change Discovery feed of n Create activities,
// 100 to a page, rendered on the fly (the server holds nothing per
// activity): activity i creates /o/i at memT0 + i ms.
func memFeed(t *testing.T, n int) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	const size = 100
	pages := (n + size - 1) / size
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", `application/ld+json;profile="https://www.w3.org/ns/activitystreams"`)
		if r.URL.Path == "/c" {
			fmt.Fprintf(w, `{"type":"OrderedCollection","id":"%s/c","totalItems":%d,"last":{"id":"%s/p/%d"}}`, base, n, base, pages-1)
			return
		}
		p, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		if err != nil || p < 0 || p >= pages {
			http.NotFound(w, r)
			return
		}
		bw := bufio.NewWriter(w)
		fmt.Fprintf(bw, `{"type":"OrderedCollectionPage","id":"%s/p/%d","partOf":{"id":"%s/c"},`, base, p, base)
		if p > 0 {
			fmt.Fprintf(bw, `"prev":{"id":"%s/p/%d"},`, base, p-1)
		}
		bw.WriteString(`"orderedItems":[`)
		for i := p * size; i < min((p+1)*size, n); i++ {
			if i > p*size {
				bw.WriteByte(',')
			}
			fmt.Fprintf(bw, `{"type":"Create","object":{"id":"%s/o/%d","type":"Manifest"},"endTime":"%s"}`, base, i, memT0.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano))
		}
		bw.WriteString("]}")
		bw.Flush()
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return base + "/c"
}

// TestMemoryFlatFeed: a first run over a Change Discovery feed (a dry
// run: the bar of issue 34 is read without fetching the objects) peaks
// at about the same resident set over 25,000 and 100,000 activities.
// The changes are spooled, not held; a spool in a bbolt database peaked
// 17 MB higher at 100,000 than at 10,000 (its mapped pages), 1.9
// times the peak. Each run is a child process whose peak RSS (VmHWM) is
// compared with the other's, measured in the same test.
func TestMemoryFlatFeed(t *testing.T) {
	if os.Getenv("RS_MEMTEST_FEED") != "" {
		memFeedChild(t)
		return
	}
	if testing.Short() {
		t.Skip("memory growth: consumes 110,000 activities in child processes (about 10 s); not with -short, the race run, whose instrumentation would make the RSS figures meaningless")
	}
	// 25,000, not fewer: below about 20,000 activities the spool's sorts
	// never leave their in-memory buffer (1 MiB of records) and the peak
	// is lower by the merge's buffers (10,000 peaked 1.21-1.24 times
	// below 100,000 on a quiet machine: a bound that flaked). Past that
	// the peak must not move.
	sizes := []int{25000, 100000}
	peak := make([]int, len(sizes))
	measure := func() {
		for k, n := range sizes {
			feed := memFeed(t, n)
			cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryFlatFeed$", "-test.v")
			cmd.Env = append(os.Environ(), "RS_MEMTEST_FEED="+feed, "RS_MEMTEST_N="+strconv.Itoa(n), "RS_MEMTEST_DEST="+t.TempDir(), "TMPDIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%d activities: %v\n%s", n, err, out)
			}
			kb := 0
			for _, l := range strings.Split(string(out), "\n") {
				if s, ok := strings.CutPrefix(l, "MEMCHILD "); ok {
					fmt.Sscanf(s, "%d", &kb)
				}
			}
			if kb == 0 {
				t.Fatalf("%d activities: no peak reported:\n%s", n, out)
			}
			if peak[k] == 0 || kb < peak[k] {
				peak[k] = kb
			}
		}
	}
	// A run again only when the bound is passed, keeping the lower
	// peaks: a transient peak (a GC cycle's timing) is not what is
	// measured.
	const bound = 1.25
	for try := 0; try < 2; try++ {
		measure()
		if float64(peak[1]) <= bound*float64(peak[0]) {
			break
		}
	}
	ratio := float64(peak[1]) / float64(peak[0])
	t.Logf("peak RSS %d KB at %d activities, %d KB at %d: ratio %.2f", peak[0], sizes[0], peak[1], sizes[1], ratio)
	if ratio > bound {
		t.Errorf("peak RSS grows %.2f times (%d KB) from %d to %d activities; bound %.2f", ratio, peak[1]-peak[0], sizes[0], sizes[1], bound)
	}
}

func memFeedChild(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("RS_MEMTEST_N"))
	opt := Options{Dest: os.Getenv("RS_MEMTEST_DEST"), Client: http.DefaultClient, DryRun: true}
	rep, err := Sync(context.Background(), os.Getenv("RS_MEMTEST_FEED"), opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sets) != 1 {
		t.Fatalf("sets: %+v", rep.Sets)
	}
	// Every object would be fetched: the run read the whole feed.
	if sr := rep.Sets[0]; sr.Fetched != n || sr.Failed != 0 {
		t.Fatalf("%d activities, the run says: %s", n, sr.Summary(true))
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if s, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			fmt.Printf("MEMCHILD %s\n", strings.TrimSuffix(strings.TrimSpace(s), " kB"))
		}
	}
}
