//go:build unix

package aggregate

import (
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestNotifyReload: a SIGHUP reaches the channel (and does not end the
// process).
func TestNotifyReload(t *testing.T) {
	c := make(chan os.Signal, 1)
	NotifyReload(c)
	defer signal.Stop(c)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if s := <-c; s != syscall.SIGHUP {
		t.Fatalf("got %v, want SIGHUP", s)
	}
}

// TestParseRemoteSourcesSymlinkOut: a remote list's file that is a
// symbolic link out of --sources-files-dir is refused; one within it is
// followed.
func TestParseRemoteSourcesSymlinkOut(t *testing.T) {
	allowed, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "token")
	if err := os.WriteFile(secret, []byte("s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(allowed, "mine"), []byte("m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(allowed, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(allowed, "outdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("mine", filepath.Join(allowed, "in")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"out", "outdir/token"} {
		_, err := ParseRemoteSources(strings.NewReader("https://a.example/ a --bearer-token-file "+name+"\n"), allowed)
		if err == nil || !strings.Contains(err.Error(), "a symbolic link out of --sources-files-dir") {
			t.Errorf("%s: %v; want a refusal", name, err)
		}
	}
	ss, err := ParseRemoteSources(strings.NewReader("https://a.example/ a --bearer-token-file in\n"), allowed)
	if err != nil || filepath.Base(ss[0].BearerTokenFile) != "mine" {
		t.Fatalf("a link within the directory: %+v, %v", ss, err)
	}
}
