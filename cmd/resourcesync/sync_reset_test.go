package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// TestSyncSourceReset (issue 30 §4): `serve DIR` keeps its state in
// DIR/.resourcesync. DIR (20 files) is mirrored, then replaced by an
// empty directory (an unmounted share: the state goes with it) and served
// again: a new Source with nothing, whose history begins after the
// mirror's checkpoint. 20 files are too few for --max-delete's default
// to hold them; sync deletes none, exits 1 and names --allow-reset, twice;
// with --allow-reset the mirror follows the Source. A Source that
// deleted 5 of its 20 files is followed without it.
func TestSyncSourceReset(t *testing.T) {
	syncLoopbackOnly(t)
	for _, reset := range []bool{true, false} {
		t.Run(map[bool]string{true: "DIR replaced by an empty one", false: "5 of 20 deleted"}[reset], func(t *testing.T) {
			root := t.TempDir()
			dir, dest := filepath.Join(root, "data"), filepath.Join(root, "mirror")
			for i := range 20 {
				putFiles(t, dir, fmt.Sprintf("d%d/f%02d.txt", i%3, i))
			}
			addr := freeAddr(t)
			base := "http://" + addr + "/"
			c, _ := testnet.Client(t)
			// serve (state in DIR/.resourcesync) until its Resource List
			// lists want resources.
			serve := func(want int) func() int {
				out, stop := background(t, "serve", "--addr", addr, "--no-hub", "--watch", "--rescan-interval", "100ms", dir)
				waitFor(t, fmt.Sprintf("serve listing %d resources", want), 20*time.Second, func() bool {
					resp, err := c.Get(base + ".resourcesync/default/resourcelist.xml")
					if err != nil {
						return false
					}
					defer resp.Body.Close()
					b, _ := io.ReadAll(resp.Body)
					return resp.StatusCode == 200 && strings.Count(string(b), "<url>") == want
				})
				_ = out
				return stop
			}
			files := func() int {
				n := 0
				filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
					if err == nil && d.Type().IsRegular() && !strings.Contains(filepath.ToSlash(p), "/.resourcesync/") {
						n++
					}
					return nil
				})
				return n
			}
			sync := func(extra ...string) (int, string) {
				code, stdout, stderr := runCLI(t, append(append([]string{"sync", "--progress", "quiet"}, extra...), base, dest)...)
				return code, stdout + stderr
			}
			stop := serve(20)
			if code, out := sync(); code != 0 || files() != 20 {
				t.Fatalf("first sync: exit %d, %d files\n%s", code, files(), out)
			}
			if !reset {
				for i := range 5 {
					os.Remove(filepath.Join(dir, fmt.Sprintf("d%d/f%02d.txt", i%3, i)))
				}
				waitFor(t, "serve listing 15 resources", 20*time.Second, func() bool {
					resp, err := c.Get(base + ".resourcesync/default/resourcelist.xml")
					if err != nil {
						return false
					}
					defer resp.Body.Close()
					b, _ := io.ReadAll(resp.Body)
					return strings.Count(string(b), "<url>") == 15
				})
				// The Change Lists may follow the Resource List by a moment:
				// every run exits 0, and one of them applies the deletions.
				waitFor(t, "the 5 deletions applied", 20*time.Second, func() bool {
					if code, out := sync(); code != 0 || strings.Contains(out, "allow-reset") {
						t.Fatalf("after the Source deleted 5: exit %d, %d files\n%s", code, files(), out)
					}
					return files() == 15
				})
				return
			}
			if code := stop(); code != 0 {
				t.Fatalf("serve: exit %d", code)
			}
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			serve(0)
			for run := range 2 {
				code, out := sync()
				if code != exitProblems || !strings.Contains(out, "--allow-reset") || !strings.Contains(out, "restarted") {
					t.Fatalf("run %d against the new, empty Source: exit %d\n%s", run, code, out)
				}
				if run == 0 && testing.Verbose() {
					t.Log(out)
				}
				if n := files(); n != 20 {
					t.Fatalf("run %d: %d files left in DEST, want 20", run, n)
				}
			}
			if code, out := sync("--allow-reset"); code != 0 || files() != 0 {
				t.Fatalf("--allow-reset: exit %d, %d files left\n%s", code, files(), out)
			}
			if code, out := sync(); code != 0 {
				t.Fatalf("the run after: exit %d\n%s", code, out)
			}
		})
	}
}
