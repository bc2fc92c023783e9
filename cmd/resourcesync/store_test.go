package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreFlag: --store forms and their errors.
func TestStoreFlag(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	boltDir, state, out := t.TempDir(), t.TempDir(), t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
		file   string // must exist afterwards
	}{
		{"bolt, no --state", []string{"publish", "--store", "bolt:" + boltDir, "--base-url", "http://127.0.0.1/", "--out", out, "--no-dumps", dir}, 0, "", filepath.Join(boltDir, "default", "state.db")},
		{"bolt apart from --state", []string{"publish", "--store", "bolt:" + filepath.Join(boltDir, "apart"), "--state", state, "--base-url", "http://127.0.0.1/", "--out", out, "--no-dumps", dir}, 0, "", filepath.Join(boltDir, "apart", "default", "state.db")},
		{"bolt without path", []string{"publish", "--store", "bolt:", "--base-url", "http://127.0.0.1/", "--out", out, dir}, 2, "no PATH", ""},
		{"unknown scheme", []string{"publish", "--store", "mysql://u:secret@h/db", "--base-url", "http://127.0.0.1/", "--out", out, dir}, 2, "u:xxxxx@h", ""},
		{"serve on postgres without --state", []string{"serve", "--addr", "127.0.0.1:0", "--store", "postgres://127.0.0.1:1/db", dir}, 2, "give --state", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d, want %d; stderr lacks %q:\n%s\n%s", code, tc.code, tc.stderr, stdout, stderr)
			}
			if strings.Contains(stderr, "secret") {
				t.Errorf("password in the message: %s", stderr)
			}
			if tc.file != "" {
				if _, err := os.Stat(tc.file); err != nil {
					t.Error(err)
				}
			}
		})
	}
}
