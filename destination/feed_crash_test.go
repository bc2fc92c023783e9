package destination_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/feed/activity"
)

// TestFeedCrashChild is the process TestFeedKill9 kills; it does nothing
// unless started by it.
func TestFeedCrashChild(t *testing.T) {
	src, dest := os.Getenv("RS_FEEDCRASH_SOURCE"), os.Getenv("RS_FEEDCRASH_DEST")
	if src == "" {
		t.Skip("child process of TestFeedKill9")
	}
	if _, err := destination.Sync(context.Background(), src, syncOpts(t, dest)); err != nil {
		t.Fatal(err)
	}
}

// TestFeedKill9: a sync of a feed killed with SIGKILL at random points,
// first runs and incremental ones, between random changes at the feed;
// after each, a rerun leaves DEST equal to the feed's objects and a
// further run fetches nothing.
func TestFeedKill9(t *testing.T) {
	trials := 10
	if testing.Short() {
		trials = 4
	}
	fs := startFeed(t, 20)
	var gets atomic.Int64
	inner := fs
	srv := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/o/") {
			gets.Add(1)
			time.Sleep(200 * time.Microsecond)
		}
		inner.ServeHTTP(w, r)
	})
	base := serveLoopback(t, func(string) http.Handler { return srv })
	fs.base = base // the activities name the wrapping server
	rng := rand.New(rand.NewPCG(34, 2))
	clock := time.Now().Add(-time.Hour)
	tick := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	body := func(i int) string { return strings.Repeat(fmt.Sprint(i, "-", rng.Uint32(), " "), 1+rng.IntN(50)) }
	for i := range 300 {
		fs.do(activity.Create, fmt.Sprintf("/o/%03d", i), body(i), tick())
	}
	dest := t.TempDir()
	killed := 0
	pending := 300 // objects the next run fetches, about
	for trial := range trials {
		if trial == trials/2 {
			dest = t.TempDir() // first runs killed too
			fs.mu.Lock()
			pending = len(fs.objects)
			fs.mu.Unlock()
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestFeedCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "RS_FEEDCRASH_SOURCE="+fs.collection(), "RS_FEEDCRASH_DEST="+dest)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := gets.Load()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		at := rng.Int64N(int64(pending) + 3)
		var err error
	poll:
		for gets.Load()-start < at {
			select {
			case err = <-exited:
				exited <- err
				break poll
			case <-time.After(200 * time.Microsecond):
			}
		}
		cmd.Process.Kill()
		if err = <-exited; err != nil {
			killed++
		}
		rep, err := feedSync(t, fs.collection(), dest, nil)
		if err != nil {
			t.Fatalf("trial %d: rerun: %v", trial, err)
		}
		if !rep.OK(false, false) {
			t.Fatalf("trial %d: rerun not OK: %+v", trial, rep.Sets[0])
		}
		fs.mu.Lock()
		sameFiles(t, destFiles(t, dest), fs.objects)
		fs.mu.Unlock()
		if rep, err = feedSync(t, fs.collection(), dest, nil); err != nil || rep.Sets[0].Fetched != 0 || rep.Sets[0].Deleted != 0 {
			t.Fatalf("trial %d: a settled run changed something: %v %+v", trial, err, rep)
		}
		// Random changes before the next trial.
		pending = 1 + rng.IntN(40)
		for range pending {
			i := rng.IntN(320)
			p := fmt.Sprintf("/o/%03d", i)
			fs.mu.Lock()
			_, exists := fs.objects[p]
			fs.mu.Unlock()
			switch {
			case exists && rng.IntN(3) == 0:
				fs.do(activity.Delete, p, "", tick())
			case exists:
				fs.do(activity.Update, p, body(i), tick())
			default:
				fs.do(activity.Create, p, body(i), tick())
			}
		}
	}
	t.Logf("%d of %d runs killed midway", killed, trials)
}
