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

// TestSyncMaxDeleteStands: the Source deletes 80 of its 150 files and
// adds 100 new ones. The first run refuses the deletions (80 of the 150
// files the mirror had) but installs the new files; the second run,
// without the flag, must still refuse them: the 100 files the refused run
// brought do not make the same 80 deletions "less than half" of a now
// larger set. Only --max-delete applies them.
func TestSyncMaxDeleteStands(t *testing.T) {
	syncLoopbackOnly(t)
	for _, mode := range [][]string{nil, {"--baseline"}, {"--audit", "--repair"}} {
		t.Run(strings.Join(append([]string{"sync"}, mode...), " "), func(t *testing.T) {
			dir := t.TempDir()
			write := func(name string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 150 {
				write(fmt.Sprintf("f%03d.txt", i))
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
			for i := range 100 {
				write(fmt.Sprintf("n%03d.txt", i))
			}
			update()
			for run := range 2 {
				code, out := sync()
				if code != exitProblems || !strings.Contains(out, "refused to delete 80 of 150 files") {
					t.Fatalf("run %d after the deletions: exit %d\n%s", run, code, out)
				}
				if _, err := os.Stat(filepath.Join(dest, "f000.txt")); err != nil {
					t.Fatalf("run %d: f000.txt deleted without --max-delete", run)
				}
			}
			if code, out := sync("--max-delete", "100%"); code != 0 {
				t.Fatalf("--max-delete 100%%: exit %d\n%s", code, out)
			}
			if _, err := os.Stat(filepath.Join(dest, "f000.txt")); err == nil {
				t.Fatal("--max-delete 100%: f000.txt still there")
			}
			if code, out := sync(); code != 0 {
				t.Fatalf("the run after: exit %d\n%s", code, out)
			}
		})
	}
}
