// Package npmtest finds the npm tools the tests run against real software
// (ldes-client, sitemapper), which scripts/test.sh installs, each pinned,
// into a cache directory: $RESOURCESYNC_NPM_DIR, else
// $HOME/.cache/resourcesync-npm, one directory NAME-VERSION per tool. A
// missing tool skips the test, except under CI=true, where it fails: CI
// must run them.
package npmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Dir returns the directory of the installed package name at version
// (the one holding node_modules), skipping (failing under CI) when it is
// not installed or node is missing.
func Dir(t testing.TB, name, version string) string {
	t.Helper()
	root := os.Getenv("RESOURCESYNC_NPM_DIR")
	if root == "" {
		home, _ := os.UserHomeDir()
		root = filepath.Join(home, ".cache", "resourcesync-npm")
	}
	dir := filepath.Join(root, name+"-"+version)
	_, err := os.Stat(filepath.Join(dir, "node_modules", name, "package.json"))
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("npm %s@%s is not installed in %s (scripts/test.sh installs it): %v", name, version, dir, err)
		}
		t.Skipf("npm %s@%s not installed in %s (run scripts/test.sh): %v", name, version, dir, err)
	}
	return dir
}

// Bin returns the path of the executable bin of the package name at
// version (node_modules/.bin/BIN), as Dir.
func Bin(t testing.TB, name, version, bin string) string {
	return filepath.Join(Dir(t, name, version), "node_modules", ".bin", bin)
}
