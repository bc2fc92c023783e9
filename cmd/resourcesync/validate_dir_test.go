package main

import (
	"strings"
	"testing"
)

// A directory as TARGET is an I/O problem (exit 2), not an XML error
// (issue 14 item 8).
func TestValidateDirectoryTarget(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "validate", dir)
	if code != 2 {
		t.Errorf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(out, "RS-XML") || !strings.Contains(errOut, dir) {
		t.Errorf("want the read error on stderr and no RS-XML problem\nstdout:\n%s\nstderr:\n%s", out, errOut)
	}
}
