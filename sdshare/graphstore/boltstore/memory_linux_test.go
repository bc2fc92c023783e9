package boltstore_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
)

const rssChildEnv = "GRAPHSTORE_RSS_CHILD"

// procStatus returns fields of /proc/self/status in bytes (VmHWM is the
// peak resident set; RssAnon and RssFile its parts now).
func procStatus(t *testing.T, keys ...string) []int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(keys))
	for _, line := range strings.Split(string(b), "\n") {
		for i, k := range keys {
			if v, ok := strings.CutPrefix(line, k+":"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				out[i] = kb << 10
			}
		}
	}
	return out
}

// TestLoadMemoryChild loads a generated snapshot into a new store and
// prints its peak RSS; it is the child process of TestLoadMemory.
func TestLoadMemoryChild(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(rssChildEnv))
	if n == 0 {
		t.Skip("helper process for TestLoadMemory")
	}
	batch, _ := strconv.Atoi(os.Getenv("GRAPHSTORE_RSS_BATCH")) // for experiments
	// NoSync: fsync changes the time, not the memory, and the test must
	// stay quick on a loaded machine.
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "graph.db"), &boltstore.Options{BatchSize: batch, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Sample the anonymous part of the resident set: VmHWM also counts the
	// pages of the mapped file a transaction touched, which are page
	// cache the kernel can drop, and grows with the file.
	var peakAnon, peakFile int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			v := procStatus(t, "RssAnon", "RssFile")
			peakAnon, peakFile = max(peakAnon, v[0]), max(peakFile, v[1])
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	if err := s.ReplaceGraph(context.Background(), "http://e/g", generated(n)); err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	close(stop)
	<-sampled
	v := procStatus(t, "VmHWM") // before Stats reads every page
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Triples != n {
		t.Fatalf("store holds %d triples, want %d", st.Triples, n)
	}
	fi, _ := os.Stat(s.Path())
	fmt.Printf("hwm=%d anon=%d file=%d size=%d seconds=%f\n", v[0], peakAnon, peakFile, fi.Size(), d.Seconds())
}

// TestLoadMemory loads snapshots of 100,000 and 1,000,000 triples into
// boltstore in fresh processes and checks that the peak anonymous RSS of
// the larger is at most 64 MiB above the smaller's: memory does not grow
// with the snapshot (ReplaceGraph's contract). The file-backed part of the
// RSS (pages of the bbolt map) is logged, not bounded: it is page cache.
func TestLoadMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 1.1 million triples; run without -short (CI does)")
	}
	type result struct {
		hwm, anon, file, size int64
		seconds               float64
	}
	run := func(n int) result {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLoadMemoryChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), rssChildEnv+"="+strconv.Itoa(n))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child (%d triples): %v\n%s", n, err, out)
		}
		var r result
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "hwm=") {
				fmt.Sscanf(line, "hwm=%d anon=%d file=%d size=%d seconds=%f", &r.hwm, &r.anon, &r.file, &r.size, &r.seconds)
			}
		}
		if r.hwm == 0 {
			t.Fatalf("child output: %s", out)
		}
		t.Logf("%d triples: %.0f triples/s (no fsync), peak RSS %.1f MiB (sampled peaks: %.1f MiB anonymous, %.1f MiB of the mapped file), file %.1f MiB",
			n, float64(n)/r.seconds, mib(r.hwm), mib(r.anon), mib(r.file), mib(r.size))
		return r
	}
	small, large := run(100000), run(1000000)
	if d := large.anon - small.anon; d > 64<<20 {
		t.Errorf("peak anonymous RSS grows by %.1f MiB from 100k to 1M triples; want < 64 MiB", mib(d))
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
