package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSyncNamedListMissing: a Resource List named explicitly that answers
// 404 fails with exit 2 and a message saying so; the Source's own
// Source Description, found at the host's well-known URL, is not mirrored
// in its place.
func TestSyncNamedListMissing(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	base, _ := serveDir(t, dir)
	dest := filepath.Join(t.TempDir(), "mirror")
	code, out, errOut := runCLI(t, "sync", "--progress", "quiet", base+"other/resourcelist.xml", dest)
	if code != exitUsage || !strings.Contains(errOut, "404") || !strings.Contains(errOut, "no other place is searched") {
		t.Fatalf("exit %d, want %d with the reason\n%s\n%s", code, exitUsage, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dest, "a.txt")); !os.IsNotExist(err) {
		t.Errorf("a.txt was mirrored from the host's Source Description: %v", err)
	}
}
