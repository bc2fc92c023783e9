package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPublishDumpsOptIn: a static publish writes no dump unless --dumps
// (issue 33: the ZIPs were a second read of every file, half of a default
// publish's cost), the Capability List names only what was written, and
// --no-dumps is still accepted.
func TestPublishDumpsOptIn(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, 3)
	for _, c := range []struct {
		name  string
		extra []string
		code  int
		dumps bool
	}{
		{"default", nil, 0, false},
		{"--dumps", []string{"--dumps"}, 0, true},
		{"--no-dumps (the old spelling)", []string{"--no-dumps"}, 0, false},
		{"both", []string{"--dumps", "--no-dumps"}, 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			args := append(append([]string{"publish", "--base-url", "http://127.0.0.1:1/", "--out", out, "--state", t.TempDir()}, c.extra...), dir)
			code, stdout, stderr := runCLI(t, args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, c.code, stdout, stderr)
			}
			if code != 0 {
				if !strings.Contains(stderr, "--dumps and --no-dumps") {
					t.Errorf("stderr %q does not name the two flags", stderr)
				}
				return
			}
			zips, _ := filepath.Glob(filepath.Join(out, ".resourcesync", "default", "resourcedumps", "*", "*.zip"))
			capl, err := os.ReadFile(filepath.Join(out, ".resourcesync", "default", "capabilitylist.xml"))
			if err != nil {
				t.Fatal(err)
			}
			listed := strings.Contains(string(capl), "resourcedump.xml") && strings.Contains(string(capl), "changedump.xml")
			if (len(zips) > 0) != c.dumps || listed != c.dumps {
				t.Errorf("dump packages %q, Capability List names the dumps: %v; want dumps %v", zips, listed, c.dumps)
			}
		})
	}
	code, stdout, _ := runCLI(t, "publish", "--help")
	if code != 0 || !strings.Contains(stdout, "--dumps") || strings.Contains(stdout, "--no-dumps") {
		t.Errorf("publish --help: exit %d; want --dumps listed and the old --no-dumps hidden:\n%s", code, stdout)
	}
}
