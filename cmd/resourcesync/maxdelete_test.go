package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSyncMaxDelete: the Source (a real one, on loopback) deletes 80 of
// its 150 files; a sync, an incremental one, a --baseline or an --audit
// --repair, refuses to delete them (more than half of a set of more than
// 100 files): exit 1 with a message naming --max-delete and the counts,
// every file still in DEST; a second run without the flag still refuses
// (the checkpoint did not move past the deletions); with --max-delete
// 100% they are deleted.
func TestSyncMaxDelete(t *testing.T) {
	syncLoopbackOnly(t)
	for _, mode := range [][]string{nil, {"--baseline"}, {"--audit", "--repair"}} {
		t.Run(strings.Join(append([]string{"sync"}, mode...), " "), func(t *testing.T) {
			dir := t.TempDir()
			for i := range 150 {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), []byte(fmt.Sprint(i)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			base, update := serveDir(t, dir)
			dest := filepath.Join(t.TempDir(), "mirror")
			sync := func(extra ...string) (int, string) {
				args := append(append(append([]string{"sync", "--progress", "quiet"}, mode...), extra...), base, dest)
				code, out, errOut := runCLI(t, args...)
				return code, out + errOut
			}
			if code, out := sync(); code != 0 {
				t.Fatalf("first sync: exit %d\n%s", code, out)
			}
			for i := range 80 {
				if err := os.Remove(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i))); err != nil {
					t.Fatal(err)
				}
			}
			update()
			left := func() int {
				n := 0
				for i := range 150 {
					if _, err := os.Stat(filepath.Join(dest, fmt.Sprintf("f%03d.txt", i))); err == nil {
						n++
					}
				}
				return n
			}
			for run := range 2 {
				code, out := sync()
				if code != exitProblems || !strings.Contains(out, "--max-delete") || !strings.Contains(out, "refused to delete 80 of 150 files") {
					t.Fatalf("run %d after the deletions: exit %d\n%s", run, code, out)
				}
				if run == 0 && testing.Verbose() {
					t.Log(out)
				}
				if n := left(); n != 150 {
					t.Fatalf("run %d: %d files left in DEST, want all 150", run, n)
				}
			}
			if code, out := sync("--max-delete", "100%"); code != 0 {
				t.Fatalf("--max-delete 100%%: exit %d\n%s", code, out)
			}
			if n := left(); n != 70 {
				t.Fatalf("--max-delete 100%%: %d files left in DEST, want 70", n)
			}
			if code, out := sync(); code != 0 {
				t.Fatalf("the run after: exit %d\n%s", code, out)
			}
		})
	}
}
