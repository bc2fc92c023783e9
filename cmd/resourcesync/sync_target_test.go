package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/storage/mem"
)

// TestSyncIntoStorageLocation: `sync SOURCE LOCATION` with a location
// that is not a directory (mem:// here, s3:// in use) writes the mirror
// through the storage.Target, keeps the state in --state DIR or, by
// default, in a directory under the user's state directory named after
// the location (said on the first run only), and exits as on a DIR.
func TestSyncIntoStorageLocation(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	for i := range 12 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)), []byte(strings.Repeat("y", i+1)), 0o644)
	}
	base, update := serveDir(t, dir)
	defer mem.Forget("sync-cli")
	st := mem.Open("sync-cli")
	state := t.TempDir()

	code, out, errOut := runCLI(t, "sync", "--progress", "quiet", "--state", state, base, "mem://sync-cli/pre")
	if code != 0 {
		t.Fatalf("sync: exit %d\n%s\n%s", code, out, errOut)
	}
	if st.Len() != 12 {
		t.Fatalf("%d objects: %q", st.Len(), st.Keys())
	}
	if o, _, ok := st.Get("pre/f03.txt"); !ok || string(o.Data) != "yyyy" {
		t.Errorf("pre/f03.txt: %q %v", o.Data, ok)
	}
	if !strings.Contains(out, "mem://sync-cli/pre") {
		t.Errorf("report does not name the location:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(state, destination.StateDirName)); err != nil {
		t.Errorf("no state in --state: %v", err)
	}

	os.Remove(filepath.Join(dir, "f00.txt"))
	update()
	if code, out, errOut = runCLI(t, "sync", "--progress", "quiet", "--state", state, base, "mem://sync-cli/pre"); code != 0 {
		t.Fatalf("incremental: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, _, ok := st.Get("pre/f00.txt"); ok || st.Len() != 11 {
		t.Errorf("deletion not mirrored: %q", st.Keys())
	}

	// The default state directory: under $XDG_STATE_HOME, named after
	// the location, said once.
	xdg := t.TempDir()
	t.Setenv("XDG_STATE_HOME", xdg)
	defer mem.Forget("sync-cli-2")
	for i, want := range []bool{true, false} {
		code, out, errOut = runCLI(t, "sync", "--progress", "quiet", base, "mem://sync-cli-2")
		if code != 0 {
			t.Fatalf("default state, run %d: exit %d\n%s\n%s", i, code, out, errOut)
		}
		if got := strings.Contains(errOut, "kept in "+filepath.Join(xdg, "resourcesync", "mirrors", "mem___sync-cli-2-")); got != want {
			t.Errorf("run %d: state directory said %v, want %v:\n%s", i, got, want, errOut)
		}
	}
	if mem.Open("sync-cli-2").Len() != 11 {
		t.Errorf("default state: %d objects", mem.Open("sync-cli-2").Len())
	}

	// --state goes with a location only; an unknown scheme is a usage error.
	if code, _, errOut = runCLI(t, "sync", "--state", state, base, t.TempDir()); code != exitUsage || !strings.Contains(errOut, "--state") {
		t.Errorf("--state with a DIR: exit %d\n%s", code, errOut)
	}
	if code, _, errOut = runCLI(t, "sync", base, "nosuch://x/y"); code != exitUsage || !strings.Contains(errOut, "unknown scheme") {
		t.Errorf("unknown scheme: exit %d\n%s", code, errOut)
	}
}
