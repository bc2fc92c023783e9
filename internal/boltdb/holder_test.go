package boltdb

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// TestHolderNamesProcess: a second open of a file held for writing fails
// with ErrLocked, and Holder names the holder (pid, command line, since
// when); the record is gone once the holder lets go, and a record left
// by a process that no longer runs names nobody.
func TestHolderNamesProcess(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.db")
	db, err := Open(p, &bbolt.Options{Timeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	release := MarkHolder(p)
	if _, err := Open(p, &bbolt.Options{Timeout: 10 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	h := Holder(p)
	for _, want := range []string{fmt.Sprintf("pid %d (this process)", os.Getpid()), filepath.Base(os.Args[0]), ", since "} {
		if !strings.Contains(h, want) {
			t.Errorf("Holder = %q, want it to say %q", h, want)
		}
	}
	if fi, err := os.Stat(p + HolderSuffix); err != nil {
		t.Fatal(err)
	} else if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("the record's mode is %v, want 0600", fi.Mode().Perm())
	}
	release()
	db.Close()
	if _, err := os.Stat(p + HolderSuffix); !os.IsNotExist(err) {
		t.Errorf("the record outlived its holder: %v", err)
	}
	if runtime.GOOS == "windows" {
		return // whether a process still runs is not checked there
	}
	// A record of a process that has exited (kill -9 leaves one).
	child := exec.Command(os.Args[0], "-test.run=^$")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	rec := fmt.Sprintf(`{"pid":%d,"args":["resourcesync","serve","/data"],"since":"2026-01-01T00:00:00Z"}`, child.Process.Pid)
	os.WriteFile(p+HolderSuffix, []byte(rec), 0o600)
	if h := Holder(p); h != "" {
		t.Errorf("Holder of a stale record = %q, want nobody", h)
	}
}

// TestHolderRedacts: a secret in the holder's command line is masked,
// in a URL or as a flag's value.
func TestHolderRedacts(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		secret string
		want   string
	}{
		{[]string{"/usr/bin/resourcesync", "serve", "--store", "postgres://rs:s3cret@db/rs", "/data"}, "s3cret", "resourcesync serve --store postgres://rs:"},
		{[]string{"resourcesync", "serve", "--hub-admin-token", "s3cret", "/data"}, "s3cret", "resourcesync serve --hub-admin-token REDACTED /data"},
		{[]string{"resourcesync", "serve", "--hub-token=s3cret", "/data"}, "s3cret", "resourcesync serve --hub-token=REDACTED /data"},
		{[]string{"resourcesync", "serve", "--bearer-token-file", "/etc/tok", "/data"}, "REDACTED", "--bearer-token-file /etc/tok /data"},
		// Every --header is a credential to the tool (httpclient sends it
		// to the Source only): an API key or a cookie is masked as well as
		// an Authorization header.
		{[]string{"resourcesync", "sync", "--header", "X-Api-Key: s3cretKEY1", "https://x/", "d"}, "s3cretKEY1", "sync --header X-Api-Key: REDACTED https://x/ d"},
		{[]string{"resourcesync", "sync", "--header=Cookie: session=s3cretKEY1", "https://x/", "d"}, "s3cretKEY1", "sync --header=Cookie: REDACTED https://x/ d"},
	} {
		got := describe(1, tc.args, time.Time{}, "")
		if strings.Contains(got, tc.secret) || !strings.Contains(got, tc.want) {
			t.Errorf("describe(%q) = %q, want %q and no %q", tc.args, got, tc.want, tc.secret)
		}
	}
}

// TestHolderNoControlCharacters: the holder's command line is another
// process's (anyone who can read the state can lock it, and /proc shows
// that process's arguments) or a record anyone who can write the
// directory wrote; the message goes to the user's terminal, so an
// argument with escape sequences or line breaks is printed quoted, never
// raw: a terminal's title, colours or a forged second line of the
// message were the holder's to choose.
func TestHolderNoControlCharacters(t *testing.T) {
	got := describe(1, []string{"resourcesync", "serve", "\x1b]0;pwned\x07", "a\nerror: run rm -rf ~", "\u202eevil", "/data dir"}, time.Time{}, "")
	for _, c := range got {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == '\u202e' {
			t.Fatalf("describe = %q: holds the control character %U", got, c)
		}
	}
	if !strings.Contains(got, "resourcesync serve ") {
		t.Errorf("describe = %q, want the command line", got)
	}
}
