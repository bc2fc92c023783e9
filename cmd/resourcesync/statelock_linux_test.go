package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStateLockedSaysWho: publish DIR while a serve DIR (another process)
// holds DIR's state says which command holds it (its pid and command
// line) and what to do, instead of "locked by another user" alone
// (issue 32, item 3).
func TestStateLockedSaysWho(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	addr := freeAddr(t)
	serve := argvCmd("serve", "--addr", addr, dir)
	var out syncBuffer
	serve.Stdout, serve.Stderr = &out, &out
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		serve.Process.Signal(syscall.SIGTERM)
		serve.Wait()
	}()
	waitFor(t, "serve", 20*time.Second, func() bool { return strings.Contains(out.String(), "serving ") })
	code, stdout, stderr := runCLI(t, "publish", "--base-url", "http://data.example.org/", "--out", t.TempDir(), dir)
	msg := stdout + stderr
	t.Logf("publish beside serve: exit %d\n%s", code, msg)
	if code == 0 {
		t.Fatal("publish beside serve succeeded")
	}
	for _, want := range []string{
		filepath.Join(dir, ".resourcesync", "default", "state.db"),
		fmt.Sprintf("pid %d", serve.Process.Pid),
		"serve --addr " + addr + " " + dir,
		"give this command --state elsewhere", "or stop the other one",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not say %q", want)
		}
	}
}

// TestMirrorLockedSaysWho: a second sync into a DEST a running
// sync --follow holds says which command holds its state and what to do
// (issue 32 item 3, for the Destination's state).
func TestMirrorLockedSaysWho(t *testing.T) {
	dir, dest := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	addr := freeAddr(t)
	serve := argvCmd("serve", "--addr", addr, dir)
	var sout syncBuffer
	serve.Stdout, serve.Stderr = &sout, &sout
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		serve.Process.Signal(syscall.SIGTERM)
		serve.Wait()
	}()
	waitFor(t, "serve", 20*time.Second, func() bool { return strings.Contains(sout.String(), "serving ") })
	src := "http://" + addr + "/"
	follow := argvCmd("sync", "--follow", "--progress", "lines", src, dest)
	var fout syncBuffer
	follow.Stdout, follow.Stderr = &fout, &fout
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		follow.Process.Signal(syscall.SIGTERM)
		follow.Wait()
	}()
	waitFor(t, "the follower's baseline", 20*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(dest, "a.txt"))
		return err == nil
	})
	code, stdout, stderr := runCLI(t, "sync", src, dest)
	msg := stdout + stderr
	t.Logf("sync beside sync --follow: exit %d\n%s", code, msg)
	if code == 0 {
		t.Fatal("a second sync into a held DEST succeeded")
	}
	for _, want := range []string{
		fmt.Sprintf("pid %d", follow.Process.Pid),
		"sync --follow",
		"stop it, or give this run another DEST",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not say %q", want)
		}
	}
}
