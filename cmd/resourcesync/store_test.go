package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
)

// TestStoreFlag: --store forms and their errors.
func TestStoreFlag(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	boltDir, state, out := t.TempDir(), t.TempDir(), t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
		file   string // must exist afterwards
	}{
		{"bolt, no --state", []string{"publish", "--store", "bolt:" + boltDir, "--base-url", "http://127.0.0.1/", "--out", out, "--no-dumps", dir}, 0, "", filepath.Join(boltDir, "default", "state.db")},
		{"bolt apart from --state", []string{"publish", "--store", "bolt:" + filepath.Join(boltDir, "apart"), "--state", state, "--base-url", "http://127.0.0.1/", "--out", out, "--no-dumps", dir}, 0, "", filepath.Join(boltDir, "apart", "default", "state.db")},
		{"bolt without path", []string{"publish", "--store", "bolt:", "--base-url", "http://127.0.0.1/", "--out", out, dir}, 2, "no PATH", ""},
		{"unknown scheme", []string{"publish", "--store", "mysql://u:secret@h/db", "--base-url", "http://127.0.0.1/", "--out", out, dir}, 2, "u:xxxxx@h", ""},
		{"serve on postgres without --state", []string{"serve", "--addr", "127.0.0.1:0", "--store", "postgres://127.0.0.1:1/db", dir}, 2, "give --state", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d, want %d; stderr lacks %q:\n%s\n%s", code, tc.code, tc.stderr, stdout, stderr)
			}
			if strings.Contains(stderr, "secret") {
				t.Errorf("password in the message: %s", stderr)
			}
			if tc.file != "" {
				if _, err := os.Stat(tc.file); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestPublishOnPostgres: publish --store postgres:// twice, with changes
// between: both exit 0 (the scanner role lasts the whole run: it was once
// cancelled as soon as the wait for it ended), the second journals the
// changes, and the tree validates.
func TestPublishOnPostgres(t *testing.T) {
	pgURL := pgtest.Database(t)
	dir, state, out := t.TempDir(), t.TempDir(), t.TempDir()
	for i := range 30 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)), []byte(fmt.Sprint(i)), 0o644)
	}
	publish := func(what string) string {
		t.Helper()
		code, stdout, stderr := runCLI(t, "publish", "--store", pgURL, "--state", state, "--out", out, "--base-url", "http://127.0.0.1:1/", "--no-dumps", dir)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", what, code, stdout, stderr)
		}
		return stdout
	}
	publish("first publish")
	os.WriteFile(filepath.Join(dir, "f00.txt"), []byte("changed"), 0o644)
	os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new"), 0o644)
	os.Remove(filepath.Join(dir, "f01.txt"))
	if got := publish("second publish"); !strings.Contains(got, "1 created, 1 updated, 1 deleted") {
		t.Errorf("second publish: %q, want 1 created, 1 updated, 1 deleted", got)
	}
	var docs []string
	filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".xml") {
			docs = append(docs, p)
		}
		return nil
	})
	if len(docs) < 3 {
		t.Fatalf("published documents: %v", docs)
	}
	if code, stdout, stderr := runCLI(t, append([]string{"validate"}, docs...)...); code != 0 {
		t.Errorf("validate: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestServeAfterPublishOtherBaseURL: serve on a shared store that a
// publish with another --base-url filled: the replica, alone, takes the
// scanner role and serves documents with its own base URL (it once exited
// at start: its first render refused the other settings).
func TestServeAfterPublishOtherBaseURL(t *testing.T) {
	pgURL := pgtest.Database(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	if code, stdout, stderr := runCLI(t, "publish", "--store", pgURL, "--state", t.TempDir(), "--out", t.TempDir(), "--base-url", "http://example.org/", "--no-dumps", dir); code != 0 {
		t.Fatalf("publish: exit %d\n%s\n%s", code, stdout, stderr)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		code, _, _ := runCLICtx(ctx, "serve", "--store", pgURL, "--state", t.TempDir(), "--addr", addr, "--no-hub", "--no-dumps", dir)
		done <- code
	}()
	defer func() { cancel(); <-done }()
	want := "http://" + addr + "/a.txt"
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		select {
		case code := <-done:
			done <- code
			t.Fatalf("serve exited with %d", code)
		default:
		}
		resp, err := http.Get("http://" + addr + "/.resourcesync/default/resourcelist.xml")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), want) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Resource List never listed %s", want)
		}
	}
}
