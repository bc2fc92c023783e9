//go:build unix

package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate"
)

// TestAggregateReload: a long-running aggregate takes a Source added to
// the sources file on SIGHUP; a file that no longer parses keeps the
// Sources in force and is shown (status.json's sources_error); the status
// page on loopback answers only a loopback Host; Ctrl-C exits 0.
func TestAggregateReload(t *testing.T) {
	aggCLILoopbackOnly(t)
	dir1, dir2 := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir1, "a.txt"), []byte("one"), 0o644)
	os.WriteFile(filepath.Join(dir2, "b.txt"), []byte("two"), 0o644)
	src1, _ := serveDir(t, dir1)
	src2, _ := serveDir(t, dir2)
	root := t.TempDir()
	sources := filepath.Join(t.TempDir(), "sources.txt")
	writeSources(t, sources, src1+" one\n")
	status := freeAddr(t)
	// --reload of an hour: only SIGHUP reloads.
	out, stop := background(t, "aggregate", "--sources", sources, "--root", root, "--reload", "1h",
		"--listen", freeAddr(t), "--status-addr", status)
	mirrored := func(p, want string) func() bool {
		return func() bool { b, err := os.ReadFile(filepath.Join(root, p)); return err == nil && string(b) == want }
	}
	waitFor(t, "Source one mirrored", 15*time.Second, mirrored("one/a.txt", "one"))
	statusJSON := func() aggregate.Snapshot {
		var snap aggregate.Snapshot
		resp, err := http.Get("http://" + status + "/status.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil {
			t.Fatal(err)
		}
		return snap
	}
	hup := func() {
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}

	writeSources(t, sources, src1+" one\n"+src2+" two\n")
	hup()
	waitFor(t, "Source two mirrored after SIGHUP", 15*time.Second, mirrored("two/b.txt", "two"))

	writeSources(t, sources, src1+" one\n"+src2+" two --no-such-option\n")
	hup()
	waitFor(t, "sources_error shown", 15*time.Second, func() bool { return statusJSON().SourcesError != "" })
	snap := statusJSON()
	if len(snap.Sources) != 2 || !strings.Contains(snap.SourcesError, "no-such-option") {
		t.Errorf("after a bad reload: %d Sources (want the 2 in force), sources_error %q", len(snap.Sources), snap.SourcesError)
	}

	req, _ := http.NewRequest("GET", "http://"+status+"/status.json", nil)
	req.Host = "attacker.example"
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("status page on loopback answered Host %s: %s", req.Host, resp.Status)
		}
	}

	if code := stop(); code != 0 {
		t.Errorf("exit %d after Ctrl-C, want 0:\n%s", code, out)
	}
}

// TestAggregateSIGTERM: the real process, stopped by SIGTERM after its
// Source is mirrored, exits 0 (as sync --follow).
func TestAggregateSIGTERM(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one"), 0o644)
	src, _ := serveDir(t, dir)
	root := t.TempDir()
	sources := filepath.Join(t.TempDir(), "sources.txt")
	writeSources(t, sources, src+" one\n")
	p := startProc(t, "aggregate", "--sources", sources, "--root", root, "--listen", freeAddr(t))
	waitFor(t, "Source one mirrored", 15*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(root, "one", "a.txt"))
		return err == nil && string(b) == "one"
	})
	p.cmd.Process.Signal(syscall.SIGTERM)
	code, ok := p.wait(20 * time.Second)
	if !ok || code != 0 {
		t.Errorf("after SIGTERM: exited %v, code %d, want 0:\n%s", ok, code, p.tail())
	}
}
