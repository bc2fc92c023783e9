package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOAIServeMirrorWithoutFlag: oai serve over a mirror made by sync,
// without --mirror, says what to give instead of only "no state at".
func TestOAIServeMirrorWithoutFlag(t *testing.T) {
	syncLoopbackOnly(t)
	dir, dest := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	base, _ := startServe(t, dir)
	if code, o, e := runCLI(t, "sync", "--progress", "quiet", base, dest); code != 0 {
		t.Fatalf("sync: %d %s %s", code, o, e)
	}
	code, _, stderr := runCLI(t, "oai", "serve", "--addr", freeAddr(t), dest)
	want := dest + " is a mirror made by sync: serve it with 'oai serve --mirror --records " + dest + "'"
	if code != exitUsage || !strings.Contains(stderr, "no state at") || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, want %d; stderr lacks %q:\n%s", code, exitUsage, want, stderr)
	}
	// A directory that is no mirror gets no such hint.
	code, _, stderr = runCLI(t, "oai", "serve", "--addr", freeAddr(t), t.TempDir())
	if code != exitUsage || strings.Contains(stderr, "--mirror --records") {
		t.Errorf("not a mirror: exit %d\n%s", code, stderr)
	}
}
