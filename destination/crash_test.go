package destination_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
)

// TestCrashChild is the process TestKill9 kills; it does nothing unless
// started by it.
func TestCrashChild(t *testing.T) {
	src, dest := os.Getenv("RS_CRASH_SOURCE"), os.Getenv("RS_CRASH_DEST")
	if src == "" {
		t.Skip("child process of TestKill9")
	}
	opt := syncOpts(t, dest)
	if _, err := destination.Sync(context.Background(), src, opt); err != nil {
		t.Fatal(err)
	}
}

// getLog records the resource paths requested while on.
type getLog struct {
	mu    sync.Mutex
	paths map[string]int
	total atomic.Int64 // resource requests ever
}

func (g *getLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isResource(r) {
			g.total.Add(1)
			g.mu.Lock()
			if g.paths != nil {
				g.paths[strings.TrimPrefix(r.URL.Path, "/")]++
			}
			g.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

func (g *getLog) start() {
	g.mu.Lock()
	g.paths = map[string]int{}
	g.mu.Unlock()
}

func (g *getLog) stop() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.paths
	g.paths = nil
	return p
}

// TestKill9 kills a baseline with SIGKILL at random points; after each, a
// rerun ends with a mirror identical to the Source, no temporary files,
// and no file that was complete before the kill downloaded again.
func TestKill9(t *testing.T) {
	trials := 20
	if testing.Short() {
		trials = 4
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 1500 {
		writeFile(t, dir, fmt.Sprintf("s/%02d/f%04d.txt", i%30, i), []byte(strings.Repeat(fmt.Sprint(i, " "), 20+i%200)))
	}
	for i := range 20 {
		b := make([]byte, 512<<10)
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		writeFile(t, dir, fmt.Sprintf("big/b%02d.bin", i), b)
	}
	var log getLog
	ts := startSource(t, dir, log.wrap, nil)
	want := tree(t, dir)

	killedMidway := 0
	var dest string
	for trial := range trials {
		dest = t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "RS_CRASH_SOURCE="+ts.base, "RS_CRASH_DEST="+dest)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := log.total.Load()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		var err error
		go func() { err = cmd.Wait(); close(exited) }()
		// Kill after a random number of resource requests: anywhere from
		// before the first to after the last.
		at := rng.Int64N(int64(len(want)) + 100)
	poll:
		for log.total.Load()-start < at {
			select {
			case <-exited:
				break poll
			case <-time.After(200 * time.Microsecond):
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		wait := log.total.Load() - start
		if err == nil {
			t.Logf("trial %d: finished before the kill", trial)
		} else {
			killedMidway++
		}
		// What is complete before the rerun must not be fetched again.
		got := tree(t, dest)
		complete := map[string]bool{}
		for k, v := range got {
			if w, ok := want[k]; ok && bytes.Equal(v, w) {
				complete[k] = true
			}
		}
		log.start()
		sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
		gets := log.stop()
		if sr.Failed != 0 {
			t.Fatalf("trial %d: rerun failed: %+v", trial, sr)
		}
		sameTree(t, dir, dest)
		if n := leftovers(t, dest); n > 0 {
			t.Fatalf("trial %d: %d temporary files left", trial, n)
		}
		for p := range gets {
			if complete[p] {
				t.Errorf("trial %d: %s was complete before the rerun and was downloaded again", trial, p)
			}
		}
		t.Logf("trial %d: killed after %d requests: %d/%d files complete, rerun fetched %d, adopted %d", trial, wait, len(complete), len(want), sr.Fetched, sr.Adopted)
	}
	if killedMidway < trials/2 {
		t.Errorf("only %d of %d trials were killed mid-run", killedMidway, trials)
	}
	// Files adopted after the kill are this tool's own: deletions at the
	// Source remove them like any other.
	removed := 0
	for p := range want {
		if removed < 200 {
			os.Remove(filepath.Join(dir, filepath.FromSlash(p)))
			removed++
		}
	}
	ts.update(t)
	sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Deleted != removed || sr.Kept != 0 || sr.Failed != 0 {
		t.Fatalf("deletions after the trials: %+v", sr)
	}
	sameTree(t, dir, dest)
}
