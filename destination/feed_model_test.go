package destination_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
)

var feedModelN = flag.Int("feedmodel.n", 2, "seeds of TestFeedModel")

// TestFeedModel: a random history of changes at a directory served by our
// own Source, mirrored through its IIIF Change Discovery collection and
// its LDES, each sync killed with SIGKILL at a random point now and then
// and run again: after each settled step both mirrors equal the Source.
// -feedmodel.n sets the seeds (2 by default; CI keeps it small).
func TestFeedModel(t *testing.T) {
	steps := 12
	if testing.Short() {
		steps = 6
	}
	for seed := range *feedModelN {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 34))
			dir := t.TempDir()
			for i := range 30 {
				writeFile(t, dir, fmt.Sprintf("d%d/f%02d.txt", i%4, i), []byte(fmt.Sprint("first ", i, rng.Uint64())))
			}
			ts := startSource(t, dir, nil, nil)
			feeds := map[string]string{
				"iiif": ts.base + ".resourcesync/default/feed/collection.json",
				"ldes": ts.base + ".resourcesync/default/feed/ldes.ttl",
			}
			dests := map[string]string{"iiif": t.TempDir(), "ldes": t.TempDir()}
			for step := range steps {
				for _, kind := range []string{"iiif", "ldes"} {
					if rng.IntN(3) == 0 {
						killAt(t, feeds[kind], dests[kind], time.Duration(rng.IntN(30))*time.Millisecond)
					}
					rep, err := destination.Sync(context.Background(), feeds[kind], syncOpts(t, dests[kind]))
					if err != nil {
						t.Fatalf("step %d, %s: %v", step, kind, err)
					}
					if rep.Sets[0].Mode != "feed" {
						t.Fatalf("step %d, %s: mode %q, not a feed", step, kind, rep.Sets[0].Mode)
					}
					if !rep.OK(false, false) {
						t.Fatalf("step %d, %s: not OK: %+v", step, kind, rep.Sets[0])
					}
					sameTree(t, dir, dests[kind])
					if t.Failed() {
						t.Fatalf("step %d, %s: the mirror differs from the Source", step, kind)
					}
				}
				// Random changes: new files, new bytes, deletions.
				for range 1 + rng.IntN(8) {
					p := fmt.Sprintf("d%d/f%02d.txt", rng.IntN(5), rng.IntN(40))
					if _, err := os.Stat(filepath.Join(dir, p)); err == nil && rng.IntN(3) == 0 {
						os.Remove(filepath.Join(dir, p))
					} else {
						writeFile(t, dir, p, []byte(fmt.Sprint("step ", step, " ", rng.Uint64())))
					}
				}
				ts.update(t)
			}
		})
	}
}

// killAt runs a sync of src into dest in a child process and kills it
// with SIGKILL after d (or lets it finish first).
func killAt(t *testing.T, src, dest string, d time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFeedCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RS_FEEDCRASH_SOURCE="+src, "RS_FEEDCRASH_DEST="+dest)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	cmd.Process.Kill()
	cmd.Wait()
}
