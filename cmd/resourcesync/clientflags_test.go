package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientFlagsEverywhere: every client command has the same client
// flags, and its help explains them and the per-origin rule.
func TestClientFlagsEverywhere(t *testing.T) {
	for _, c := range [][]string{{"sync"}, {"validate"}, {"sdshare", "sync"}} {
		code, out, errOut := runCLI(t, append(c, "--help")...)
		if code != 0 {
			t.Fatalf("%v --help: exit %d\n%s", c, code, errOut)
		}
		for _, want := range []string{"--header", "--bearer-token-file", "--netrc-file", "--ca-cert", "--insecure",
			"RESOURCESYNC_BEARER_TOKEN", "See also: resourcesync help", "authentication"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v --help does not mention %q", c, want)
			}
		}
	}
	// The long text is the topic the commands' help names.
	_, out, _ := runCLI(t, "help", "authentication")
	for _, want := range []string{"PROTECTED SOURCES AND TLS", "never to another origin", "--bearer-token-file", "RESOURCESYNC_BEARER_TOKEN"} {
		if !strings.Contains(out, want) {
			t.Errorf("help authentication does not mention %q", want)
		}
	}
}

// TestClientFlagErrors: unusable client flags are usage errors (exit 2)
// that name the flag; a malformed ~/.netrc nobody asked for is only a
// warning, one named with --netrc-file an error.
func TestClientFlagErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "netrc")
	os.WriteFile(bad, []byte("machine h login"), 0o600)
	notPEM := filepath.Join(dir, "ca.pem")
	os.WriteFile(notPEM, []byte("not a certificate"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--header", "no colon"}, "--header"},
		{[]string{"--bearer-token-file", filepath.Join(dir, "missing")}, "--bearer-token-file"},
		{[]string{"--ca-cert", notPEM}, "--ca-cert"},
		{[]string{"--netrc-file", bad}, "netrc"},
	} {
		code, _, errOut := runCLI(t, append(append([]string{"validate"}, tc.args...), "http://127.0.0.1:1/")...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, want %d naming %s\n%s", tc.args, code, exitUsage, tc.want, errOut)
		}
	}
	t.Setenv("HOME", dir)
	t.Setenv("NETRC", "")
	os.WriteFile(filepath.Join(dir, ".netrc"), []byte("machine h login"), 0o600)
	code, _, errOut := runCLI(t, "validate", filepath.Join(dir, "absent.xml"))
	if !strings.Contains(errOut, "warning: ") || !strings.Contains(errOut, "absent.xml: not validated") {
		t.Errorf("malformed ~/.netrc: exit %d\n%s", code, errOut)
	}
}
