package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source"
)

// TestServeWatchesByDefault: serve without --watch (and without rescans)
// publishes an edit on its own, so a sync right after sees it; the wait is
// bounded (the debounce and an update: well under the bound on any
// machine), and the assertion is the mirror's content, not a sleep.
// --no-watch and --watch=false turn it off: the edit is then not
// published, which the same sync shows.
func TestServeWatchesByDefault(t *testing.T) {
	syncLoopbackOnly(t)
	for _, tc := range []struct {
		name  string
		flags []string
		sees  bool
	}{
		{"default", nil, true},
		{"--no-watch", []string{"--no-watch"}, false},
		{"--watch=false", []string{"--watch=false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "a.txt"), []byte("version 1"), 0o644)
			addr := freeAddr(t)
			args := append([]string{"serve", "--addr", addr, "--no-hub", "--rescan-interval", "0", "--state", t.TempDir()}, tc.flags...)
			out, _ := background(t, append(args, dir)...)
			waitFor(t, "serve", 20*time.Second, func() bool { return strings.Contains(out.String(), "serving ") })
			dest := t.TempDir()
			syncOnce := func() string {
				code, so, se := runCLI(t, "sync", "--progress", "quiet", "http://"+addr+"/", dest)
				if code != 0 {
					t.Fatalf("sync: exit %d\n%s\n%s", code, so, se)
				}
				b, _ := os.ReadFile(filepath.Join(dest, "a.txt"))
				return string(b)
			}
			if got := syncOnce(); got != "version 1" {
				t.Fatalf("first sync: a.txt = %q", got)
			}
			os.WriteFile(filepath.Join(dir, "a.txt"), []byte("version 2, longer"), 0o644)
			if !tc.sees {
				// Nothing would publish it: one sync after the time a
				// watch takes by default shows it was not.
				time.Sleep(500 * time.Millisecond)
				if got := syncOnce(); got != "version 1" {
					t.Errorf("with %s, the edit was published: a.txt = %q", tc.name, got)
				}
				return
			}
			deadline := time.Now().Add(10 * time.Second)
			for got := syncOnce(); got != "version 2, longer"; got = syncOnce() {
				if time.Now().After(deadline) {
					t.Fatalf("10 s after the edit, sync still gets a.txt = %q: serve does not watch by default\n%s", got, out)
				}
			}
		})
	}
}

// TestServeWatchFallsBack: where DIR's file system raises no event for
// others' changes (a network file system), serve does not watch by
// default and says so, with what it does instead; an explicit --watch
// watches anyway.
func TestServeWatchFallsBack(t *testing.T) {
	syncLoopbackOnly(t)
	old := watchBlind
	t.Cleanup(func() { watchBlind = old })
	watchBlind = func(*source.Source) string {
		return "DIR is on nfs, where changes made by other machines raise no event"
	}
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{nil, `msg="not watching: DIR is on nfs, where changes made by other machines raise no event; rescanning every 1m0s (--watch to watch anyway, --no-watch to silence this)"`},
		{[]string{"--watch"}, ""},
	} {
		addr := freeAddr(t)
		args := append([]string{"serve", "--addr", addr, "--no-hub", "--state", t.TempDir()}, tc.flags...)
		out, _ := background(t, append(args, t.TempDir())...)
		waitFor(t, "serve", 20*time.Second, func() bool { return strings.Contains(out.String(), "serving ") })
		if got := strings.Contains(out.String(), "not watching"); got != (tc.want != "") || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: want %q in the output:\n%s", tc.flags, tc.want, out)
		}
	}
}
