package main

import (
	"fmt"
	"os"
	"path/filepath"
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

// TestValidatePublishTreeOffline: a real publish output, validated before
// it is uploaded with --base-url URL DIR: the walk reads every document
// from OUT (with no network: the host does not exist), and a broken
// document is found in it (issue 19, 5e).
func TestValidatePublishTreeOffline(t *testing.T) {
	src, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	for _, n := range []string{"a.txt", "sub/b.txt"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, n)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := "https://data.invalid/collection/"
	if code, o, e := runCLI(t, "publish", "--base-url", base, "--out", out, "--state", t.TempDir(), "--no-dumps", src); code != 0 {
		t.Fatalf("publish: exit %d\n%s\n%s", code, o, e)
	}
	code, o, e := runCLI(t, "validate", "--base-url", base, out)
	// The Source Description, the Capability List, the Resource List, the
	// Change List Index and its list, the archives...
	if code != 0 || !strings.Contains(o, out+": ") || strings.Contains(o, " 0 documents") || strings.Contains(o+e, "RS-FETCH") {
		t.Fatalf("valid tree: exit %d\nstdout:\n%s\nstderr:\n%s", code, o, e)
	}
	var docs int
	fmt.Sscanf(o[strings.LastIndex(o, out+": ")+len(out)+2:], "%d documents", &docs)
	if docs < 4 {
		t.Fatalf("only %d documents walked:\n%s", docs, o)
	}
	t.Logf("%s", o)

	// Without --base-url: what to add is said.
	if code, _, e := runCLI(t, "validate", out); code != 2 || !strings.Contains(e, "--base-url") {
		t.Fatalf("directory without --base-url: exit %d, %s", code, e)
	}

	// A Resource List broken on disk is found, with its URL.
	rl := filepath.Join(out, ".resourcesync", "default", "resourcelist.xml")
	b, err := os.ReadFile(rl)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rl, []byte(strings.Replace(string(b), "capability=\"resourcelist\"", "capability=\"changelist\"", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, o, e = runCLI(t, "validate", "--base-url", base, out)
	if code != 1 || !strings.Contains(o, base+".resourcesync/default/resourcelist.xml") {
		t.Fatalf("broken Resource List: exit %d\nstdout:\n%s\nstderr:\n%s", code, o, e)
	}
	t.Logf("%s", o)
}
