package main

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSyncBWLimit: sync --bwlimit 256KiB mirrors a 1 MiB file in at
// least about 3 s (4 s, less the first burst and the documents' share);
// the limit reaches the bodies sync reads, not only a test's client.
func TestSyncBWLimit(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	body := make([]byte, 1<<20)
	rand.Read(body)
	os.WriteFile(filepath.Join(dir, "big.bin"), body, 0o644)
	base, _ := serveDir(t, dir)
	dest := t.TempDir()
	start := time.Now()
	code, out, errOut := runCLI(t, "sync", "--progress", "quiet", "--no-dumps", "--bwlimit", "256KiB", base, dest)
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "big.bin")); !bytes.Equal(b, body) {
		t.Fatal("big.bin differs")
	}
	if took < 3*time.Second {
		t.Errorf("1 MiB with --bwlimit 256KiB took %v, want at least 3 s", took)
	}
}
