package destination_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/source"
)

// sourceAt serves a new Source of dir (state in stateDir) at addr: the
// same base URL as a Source served there before.
func sourceAt(t *testing.T, addr, dir, stateDir string) (stop func()) {
	t.Helper()
	var ln net.Listener
	var err error
	for range 50 { // the previous server's port is being released
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	src, err := source.Open(source.Config{BaseURL: "http://" + addr + "/", Sets: []source.SetConfig{{Name: "default", Dir: dir}},
		StateDir: stateDir, ChangeListPeriod: time.Hour, AllowEmpty: true})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if _, err := src.Update(t.Context()); err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: src.Handler(nil)}}
	srv.Start()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			srv.Close()
			src.Close()
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestSourceReset: a Source whose state lived inside its directory comes
// back, after the directory was emptied (or unmounted), as a new Source
// with nothing. Its history restarted after the mirror's checkpoint and
// it names none of the mirror's 20 files (too few for --max-delete's
// default to hold them): no run deletes any (incremental, --baseline,
// --audit --repair), each fails saying so and naming --allow-reset, which
// lets the mirror follow. A Source that deleted 5 of its 20 files, or
// all of them with the deletions listed, is not a reset.
func TestSourceReset(t *testing.T) {
	const n = 20
	for _, tc := range []struct {
		name  string
		reset bool // the directory comes back empty, its state gone
		del   int  // else: the Source deletes this many files
		mode  destination.Mode
		audit bool
	}{
		{name: "reset, incremental", reset: true},
		{name: "reset, baseline", reset: true, mode: destination.ModeBaseline},
		{name: "reset, audit repair", reset: true, mode: destination.ModeAudit, audit: true},
		{name: "5 of 20 deleted", del: 5},
		{name: "all 20 deleted, listed as deleted", del: n},
		{name: "all 20 deleted, baseline", del: n, mode: destination.ModeBaseline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "data")
			for i := range n {
				writeFile(t, dir, fmt.Sprintf("f%02d.txt", i), []byte(fmt.Sprint("file ", i)))
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			stop := sourceAt(t, addr, dir, filepath.Join(dir, ".resourcesync"))
			base := "http://" + addr + "/"
			dest := t.TempDir()
			if sr := one(t, mustSync(t, base, syncOpts(t, dest))); sr.Fetched != n || sr.Failed != 0 {
				t.Fatalf("first sync: %+v", sr)
			}
			if tc.reset {
				stop()
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				sourceAt(t, addr, dir, filepath.Join(dir, ".resourcesync"))
			} else {
				// Later, so that the deletions are not at the checkpoint's time.
				time.Sleep(5 * time.Millisecond)
				for i := range tc.del {
					os.Remove(filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)))
				}
				stop()
				sourceAt(t, addr, dir, filepath.Join(dir, ".resourcesync"))
			}
			opt := syncOpts(t, dest)
			opt.Mode, opt.Repair = tc.mode, tc.audit
			left := func() int {
				m := tree(t, dest)
				return len(m)
			}
			if !tc.reset {
				rep := mustSync(t, base, opt)
				if sr := one(t, rep); !rep.OK(tc.audit, tc.audit) || strings.Contains(sr.Summary(false), "allow-reset") {
					t.Fatalf("deletions at the Source taken for a reset: %+v\n%s", sr, sr.Summary(false))
				}
				if got := left(); got != n-tc.del {
					t.Fatalf("%d files left, want %d", got, n-tc.del)
				}
				return
			}
			for run := range 2 {
				rep := mustSync(t, base, opt)
				sr := one(t, rep)
				if rep.OK(tc.audit, tc.audit) || !strings.Contains(sr.Summary(false), "--allow-reset") || sr.Deleted != 0 {
					t.Fatalf("run %d against the new, empty Source: OK %v, %+v\n%s", run, rep.OK(tc.audit, tc.audit), sr, sr.Summary(false))
				}
				if got := left(); got != n {
					t.Fatalf("run %d: %d files left in DEST, want all %d", run, got, n)
				}
			}
			opt.AllowReset = true
			rep := mustSync(t, base, opt)
			if sr := one(t, rep); !rep.OK(tc.audit, tc.audit) || sr.Deleted != n {
				t.Fatalf("--allow-reset: %+v", sr)
			}
			if got := left(); got != 0 {
				t.Fatalf("--allow-reset: %d files left", got)
			}
			if rep := mustSync(t, base, syncOpts(t, dest)); !rep.OK(false, false) {
				t.Fatalf("the run after: %+v", one(t, rep))
			}
		})
	}
}

// an unmount, or emptied and refilled with one file) as a new Source
// lists one of the mirror's 20 files; its history restarted after the
// checkpoint. Its deletions of the other 19 are listed nowhere: the
// mirror must not lose them without --allow-reset.
func TestSourceResetKeepsOneFile(t *testing.T) {
	const n = 20
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	for i := range n {
		writeFile(t, dir, fmt.Sprintf("f%02d.txt", i), []byte(fmt.Sprint("file ", i)))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stop := sourceAt(t, addr, dir, filepath.Join(dir, ".resourcesync"))
	base := "http://" + addr + "/"
	dest := t.TempDir()
	if sr := one(t, mustSync(t, base, syncOpts(t, dest))); sr.Fetched != n || sr.Failed != 0 {
		t.Fatalf("first sync: %+v", sr)
	}
	stop()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "f00.txt", []byte("file 0"))
	sourceAt(t, addr, dir, filepath.Join(dir, ".resourcesync"))
	rep := mustSync(t, base, syncOpts(t, dest))
	sr := one(t, rep)
	if got := len(tree(t, dest)); got != n {
		t.Fatalf("a new Source listing 1 of the %d files: %d left in DEST (deleted %d), OK %v\n%s", n, got, sr.Deleted, rep.OK(false, false), sr.Summary(false))
	}
	if rep.OK(false, false) || sr.ResetRefused != n-1 || !strings.Contains(sr.Summary(false), "--allow-reset") {
		t.Fatalf("want the run refused, naming --allow-reset: OK %v\n%s", rep.OK(false, false), sr.Summary(false))
	}
}
