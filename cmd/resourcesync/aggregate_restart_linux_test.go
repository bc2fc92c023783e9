package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
)

// TestAggregateRestartAfterKill: an aggregate process killed with kill -9
// and started again at once under the same --node (a supervisor's
// restart) waits for its predecessor's heartbeat to expire, about one
// --lease, and then runs the Source: it is neither refused as a second
// live process nor left without the leases its predecessor held. The
// same with bolt (one process holds the file: no wait) and with
// PostgreSQL, each restart an `aggregate --once`.
func TestAggregateRestartAfterKill(t *testing.T) {
	const lease = 2 * time.Second
	for _, kind := range []string{"bolt", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			root := t.TempDir()
			store := "bolt:" + filepath.Join(t.TempDir(), "store")
			if kind == "postgres" {
				pgtest.Skip(t)
				store = pgtest.Database(t)
			}
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one"), 0o644)
			src, update := serveDir(t, dir)
			sourcesFile := filepath.Join(t.TempDir(), "sources.txt")
			writeSources(t, sourcesFile, src+" one\n")
			args := []string{"aggregate", "--sources", sourcesFile, "--store", store, "--lease", lease.String(),
				"--node", "n1", "--root", root}
			first := startProc(t, append(args, "--poll-interval", "1h", "--listen", freeAddr(t))...)
			waitFor(t, "the first process to mirror the Source", 30*time.Second, func() bool {
				b, err := os.ReadFile(filepath.Join(root, "one", "a.txt"))
				return err == nil && string(b) == "one"
			})
			first.kill()
			os.WriteFile(filepath.Join(dir, "a.txt"), []byte("two"), 0o644)
			update()
			start := time.Now()
			second := startProc(t, append(args, "--once")...)
			code, ok := second.wait(4*lease + 10*time.Second)
			took := time.Since(start)
			if !ok || code != 0 {
				t.Fatalf("restart after kill -9: exited %v, code %d after %v:\n%s", ok, code, took, second.tail())
			}
			if b, _ := os.ReadFile(filepath.Join(root, "one", "a.txt")); string(b) != "two" {
				t.Errorf("after the restart's run: a.txt %q, want \"two\":\n%s", b, second.tail())
			}
			if took > 2*lease+5*time.Second {
				t.Errorf("the restart took %v for a lease of %v", took, lease)
			}
			t.Logf("%s: restart ran in %v (lease %v)", kind, took, lease)
		})
	}
}
