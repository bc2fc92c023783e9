package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogFile: --log-file takes the log and progress lines (appended,
// run after run), stderr keeps only the final error line, which the file
// also gets.
func TestLogFile(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	for i := range 5 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)), []byte("x"), 0o644)
	}
	base, _ := serveDir(t, dir)
	dest := filepath.Join(t.TempDir(), "mirror")
	logf := filepath.Join(t.TempDir(), "sync.log")
	for run := range 2 {
		code, out, errOut := runCLI(t, "sync", "--log-file", logf, "--progress", "lines", base, dest)
		if code != 0 || errOut != "" || !strings.Contains(out, "in sync") {
			t.Fatalf("run %d: exit %d\nstdout:\n%s\nstderr:\n%s", run, code, out, errOut)
		}
	}
	b, err := os.ReadFile(logf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "sync default: baseline from "+base) || !strings.Contains(string(b), "sync default: incremental") {
		t.Errorf("both runs are not logged (appended):\n%s", b)
	}
	// A failure: the final line on stderr and in the file.
	code, _, errOut := runCLI(t, "sync", "--log-file", logf, "--timeout", "1s", "http://127.0.0.1:1/", dest)
	b, _ = os.ReadFile(logf)
	if code != exitUsage || !strings.HasPrefix(errOut, "resourcesync: discovery: ") || !strings.Contains(string(b), errOut) {
		t.Errorf("failure: exit %d, stderr %q\nlog:\n%s", code, errOut, b)
	}
	if code, _, errOut := runCLI(t, "serve", "--log-file", filepath.Join(dir, "no", "such", "dir.log"), dir); code != exitUsage || !strings.Contains(errOut, "--log-file: open ") {
		t.Errorf("unwritable log file: exit %d, %q", code, errOut)
	}
	for _, c := range [][]string{{"serve"}, {"hub"}, {"sdshare", "serve"}} {
		if _, out, _ := runCLI(t, append(c, "--help")...); !strings.Contains(out, "--log-file FILE") {
			t.Errorf("%v has no --log-file", c)
		}
	}
}
