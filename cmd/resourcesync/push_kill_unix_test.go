//go:build unix

package main

import (
	"fmt"
	"io/fs"

	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pushTree reads the files of dir (dot names skipped: state) by path.
func pushTree(dir string) map[string]string {
	m := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") && p != dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			m[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	return m
}

// TestPushKill9: serve and sync --follow over the live push (no
// callback), each killed with SIGKILL in the middle of bursts of changes
// and restarted: once things settle DEST equals DIR every time, with the
// Change Lists polled only once an hour (the push, the reconnections'
// catch-ups and the start's catch-up bring everything).
func TestPushKill9(t *testing.T) {
	syncLoopbackOnly(t)
	if testing.Short() {
		t.Skip("processes killed and restarted: not in -short mode")
	}
	dir, dest, state := t.TempDir(), t.TempDir(), t.TempDir()
	for i := range 10 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)), []byte(fmt.Sprint("v0 ", i)), 0o644)
	}
	addr := freeAddr(t)
	base := "http://" + addr + "/"
	serveArgs := []string{"serve", "--addr", addr, "--watch", "--debounce", "20ms", "--rescan-interval", "0", "--no-hub", "--state", state, dir}
	startServe := func() *proc {
		p := startProc(t, serveArgs...)
		waitFor(t, "serve", 30*time.Second, func() bool { return strings.Contains(p.out.String(), "live push over WebSocket") })
		return p
	}
	startFollow := func() *proc {
		return startProc(t, "sync", "--follow", "--max-delete", "-1", "--poll-interval", "1h", base, dest)
	}
	settled := func(what string, f *proc) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			want, got := pushTree(dir), pushTree(dest)
			if mapsEqual(want, got) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: DEST differs from DIR\nDIR  %v\nDEST %v\nfollower:\n%s", what, want, got, f.tail())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	srv := startServe()
	f := startFollow()
	waitFor(t, "the live push", 30*time.Second, func() bool { return strings.Contains(f.out.String(), "live push for set") })
	settled("start", f)
	n := 0
	burst := func(k int) {
		for i := range k {
			n++
			name := fmt.Sprintf("f%02d.txt", (n*7+i)%25)
			if n%5 == 0 {
				os.Remove(filepath.Join(dir, name))
			} else {
				os.WriteFile(filepath.Join(dir, name), []byte(fmt.Sprint("v", n)), 0o644)
			}
			time.Sleep(3 * time.Millisecond)
		}
	}
	for round := range 4 {
		burst(15)
		switch round % 2 {
		case 0: // the follower dies in the middle of applying
			burst(5)
			f.kill()
			burst(10)
			f = startFollow()
		case 1: // the Source dies; changes while it is down
			burst(5)
			srv.kill()
			burst(10)
			srv = startServe()
			burst(5)
		}
		settled(fmt.Sprintf("round %d", round), f)
	}
	if !strings.Contains(f.out.String(), "live push for set") {
		t.Errorf("the last follower did not use the push:\n%s", f.tail())
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
