package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSyncDryRunLists: --dry-run names every path it would fetch and
// delete, one line each, not only the totals.
func TestSyncDryRunLists(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	for i := range 12 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)), []byte(strings.Repeat("x", 100*i)), 0o644)
	}
	base, update := serveDir(t, dir)
	dest := filepath.Join(t.TempDir(), "mirror")

	code, out, errOut := runCLI(t, "sync", "--dry-run", "-q", base, dest)
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	for i := range 12 {
		want := fmt.Sprintf("would fetch f%02d.txt (%d B)\n", i, 100*i)
		if i >= 11 {
			want = fmt.Sprintf("would fetch f%02d.txt (1.1 KiB)\n", i)
		}
		if !strings.Contains(out, want) {
			t.Errorf("no line %q in\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?s)would fetch .*baseline: would fetch 12 `).MatchString(out) {
		t.Errorf("the list does not come before the summary:\n%s", out)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatalf("dry run created %s", dest)
	}

	if code, out, _ := runCLI(t, "sync", "-q", base, dest); code != 0 || strings.Contains(out, "would ") {
		t.Fatalf("sync: exit %d\n%s", code, out)
	}
	os.Remove(filepath.Join(dir, "f03.txt"))
	os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new"), 0o644)
	update()
	code, out, _ = runCLI(t, "sync", "--dry-run", "-q", base, dest)
	if code != 0 || !strings.Contains(out, "would delete f03.txt: ") || !strings.Contains(out, "would fetch new.txt (3 B)\n") ||
		strings.Count(out, "would fetch ") != 2 { // new.txt, and the summary's "would fetch 1"
		t.Errorf("incremental dry run: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dest, "f03.txt")); err != nil {
		t.Errorf("dry run deleted f03.txt: %v", err)
	}
}
