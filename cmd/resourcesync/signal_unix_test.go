//go:build unix

package main

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMExitCodes: the built binary, stopped with SIGTERM, exits as
// the help says: a server 0 after its shutdown, a sync in progress 1.
func TestSIGTERMExitCodes(t *testing.T) {
	bin := builtBinary(t)

	for _, srv := range []struct {
		name, ready string
		args        func(t *testing.T) []string
	}{
		{"serve", "serving ", func(t *testing.T) []string {
			dir := t.TempDir()
			writeFiles(t, dir, 3)
			return []string{"serve", "--addr", "127.0.0.1:0", "--state", t.TempDir(), dir}
		}},
		{"hub", "hub at ", func(t *testing.T) []string { return []string{"hub", "--addr", "127.0.0.1:0", "--state", t.TempDir()} }},
		{"sync --follow", "following ", func(t *testing.T) []string {
			dir := t.TempDir()
			writeFiles(t, dir, 3)
			base := sourceServer(t, dir, func(h http.Handler) http.Handler { return h })
			return []string{"sync", "--follow", "-q", "--listen", "127.0.0.1:0", base, filepath.Join(t.TempDir(), "mirror")}
		}},
	} {
		t.Run(srv.name, func(t *testing.T) { serverSIGTERM(t, bin, srv.ready, srv.args(t)) })
	}

	t.Run("sync", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, 5)
		fetching := make(chan struct{}, 16)
		base := sourceServer(t, dir, func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if isDoc(r) {
					h.ServeHTTP(w, r)
					return
				}
				fetching <- struct{}{} // the signal comes while resources are fetched
				<-r.Context().Done()
			})
		})
		cmd := exec.Command(bin, "sync", "-q", base, filepath.Join(t.TempDir(), "mirror"))
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		select {
		case <-fetching:
		case <-time.After(time.Minute):
			t.Fatalf("no resource requested\n%s", out.String())
		}
		cmd.Process.Signal(syscall.SIGTERM)
		if code := exitCodeOf(t, cmd.Wait()); code != exitProblems {
			t.Errorf("sync after SIGTERM: exit %d, want 1\n%s", code, out.String())
		}
		if !strings.Contains(out.String(), "interrupted") {
			t.Errorf("output does not say interrupted:\n%s", out.String())
		}
	})
}

func waitLine(t *testing.T, r io.Reader, prefix string) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			return
		}
	}
	t.Fatalf("no line %q on stdout", prefix)
}

func exitCodeOf(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return ee.ExitCode()
}

// serverSIGTERM starts the server, waits for its ready line, sends SIGTERM
// and expects exit 0.
func serverSIGTERM(t *testing.T, bin, ready string, args []string) {
	cmd := exec.Command(bin, args...)
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	waitLine(t, stdout, ready)
	go io.Copy(io.Discard, stdout)
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCodeOf(t, cmd.Wait()); code != 0 {
		t.Errorf("%s after SIGTERM: exit %d, want 0\n%s", args[0], code, stderr.String())
	}
}
