package destination_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
)

// TestSmallRunNoScratchDatabase: a baseline of a few files keeps the set
// of paths it has seen in memory; no scratch database is created in DEST
// (a file created, fdatasynced by bbolt and removed, which cost a small
// run more than its list).
func TestSmallRunNoScratchDatabase(t *testing.T) {
	dir := t.TempDir()
	for i := range 40 {
		writeFile(t, dir, fmt.Sprintf("d%d/f%02d.txt", i%4, i), []byte(strings.Repeat("x", 100+i)))
	}
	ts := startSource(t, dir, nil, nil)
	dest := t.TempDir()
	tmp := filepath.Join(dest, destination.StateDirName, "tmp")
	var mu sync.Mutex
	var scratch []string
	installs := 0
	destination.SetTestAfterInstall(func(string) {
		mu.Lock()
		defer mu.Unlock()
		installs++
		if m, _ := filepath.Glob(filepath.Join(tmp, "*.db")); len(m) > 0 && len(scratch) == 0 {
			scratch = m
		}
	})
	defer destination.SetTestAfterInstall(nil)
	sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Failed != 0 || installs != 40 {
		t.Fatalf("%d installs: %+v", installs, sr)
	}
	if len(scratch) > 0 {
		t.Errorf("scratch databases during a run of 40 files: %q", scratch)
	}
	sameTree(t, dir, dest)
}

// TestStartupSyncedCommits: a first run into a new DEST syncs its state
// only for what a crash must not lose (the intents before the installs,
// the records after them, the checkpoint with the run mark cleared); the
// state's creation, the start-up's meta values and the run mark, all
// before it reads a list, are not synced apart. A second run with nothing to do syncs the mark and the
// checkpoint.
func TestStartupSyncedCommits(t *testing.T) {
	dir := t.TempDir()
	for i := range 30 {
		writeFile(t, dir, fmt.Sprintf("f%02d.txt", i), []byte(strings.Repeat("y", 50+i)))
	}
	var before atomic.Int64
	var once sync.Once
	var atList int64
	// The lists are read once the state is open and the run marked.
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "resourcelist") || strings.Contains(r.URL.Path, "resourcedump") {
				once.Do(func() { atList = destination.SyncedStateCommits() - before.Load() })
			}
			next.ServeHTTP(w, r)
		})
	}
	ts := startSource(t, dir, wrap, nil)
	dest := t.TempDir()
	before.Store(destination.SyncedStateCommits())
	sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	first := destination.SyncedStateCommits() - before.Load()
	if sr.Failed != 0 || sr.Fetched+sr.Adopted != 30 {
		t.Fatalf("first run: %+v", sr)
	}
	sameTree(t, dir, dest)
	b := destination.SyncedStateCommits()
	sr = one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	second := destination.SyncedStateCommits() - b
	if sr.Failed != 0 || sr.Fetched != 0 {
		t.Fatalf("second run: %+v", sr)
	}
	t.Logf("synced state commits: first run %d (%d before it read a list), second run %d", first, atList, second)
	if atList != 0 {
		t.Errorf("first run synced %d state commits before it read a list, want none (creation, meta values, run mark)", atList)
	}
	// The intents may take a few commits (intentEvery), the records
	// one, the checkpoint with the run mark cleared one.
	if first > 5 {
		t.Errorf("first run synced %d state commits, want at most 5", first)
	}
	if second > 2 {
		t.Errorf("run with nothing to do synced %d state commits, want at most 2 (run mark, checkpoint)", second)
	}
}

// TestKill9AfterStateCreation kills a first run with SIGKILL once its
// state is created, its meta values and run mark committed (unsynced,
// a fresh state's setup), and before it reads a list; and, in other
// trials, as soon as state.db appears. The next run completes the mirror
// exactly, with no temporary file left.
func TestKill9AfterStateCreation(t *testing.T) {
	dir := t.TempDir()
	for i := range 60 {
		writeFile(t, dir, fmt.Sprintf("s/%d/f%02d.txt", i%3, i), []byte(strings.Repeat(fmt.Sprint(i), 40+i)))
	}
	var mu sync.Mutex
	var hold chan struct{} // closed by the test to release held requests
	reached := make(chan struct{}, 1)
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			h := hold
			mu.Unlock()
			// The lists are read after the state is opened and the
			// run marked (discovery reads only the Source
			// Description and the Capability List).
			if h != nil && (strings.Contains(r.URL.Path, "resourcelist") || strings.Contains(r.URL.Path, "resourcedump")) {
				select {
				case reached <- struct{}{}:
				default:
				}
				<-h
			}
			next.ServeHTTP(w, r)
		})
	}
	ts := startSource(t, dir, wrap, nil)
	for trial := range 4 {
		dest := t.TempDir()
		held := trial%2 == 0
		mu.Lock()
		if held {
			hold = make(chan struct{})
		} else {
			hold = nil
		}
		mu.Unlock()
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "RS_CRASH_SOURCE="+ts.base, "RS_CRASH_DEST="+dest)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		db := filepath.Join(dest, destination.StateDirName, "state.db")
		if held {
			select {
			case <-reached:
			case err := <-exited:
				t.Fatalf("trial %d: child ended before reading a list: %v\n%s", trial, err, out.String())
			case <-time.After(30 * time.Second):
				t.Fatalf("trial %d: child never read a list", trial)
			}
		} else {
		poll:
			for {
				if _, err := os.Lstat(db); err == nil {
					break
				}
				select {
				case err := <-exited:
					t.Fatalf("trial %d: child ended before creating its state: %v\n%s", trial, err, out.String())
				case <-time.After(50 * time.Microsecond):
				case <-time.After(30 * time.Second):
					break poll
				}
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		err := <-exited
		mu.Lock()
		if hold != nil {
			close(hold)
			hold = nil
		}
		mu.Unlock()
		if err == nil {
			t.Fatalf("trial %d: child finished before the kill", trial)
		}
		if held {
			if _, err := os.Lstat(db); err != nil {
				t.Fatalf("trial %d: no state after the kill: %v", trial, err)
			}
		}
		sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
		if sr.Failed != 0 || sr.Fetched+sr.Adopted != 60 {
			t.Fatalf("trial %d: rerun: %+v", trial, sr)
		}
		sameTree(t, dir, dest)
		if n := leftovers(t, dest); n > 0 {
			t.Fatalf("trial %d: %d temporary files left", trial, n)
		}
		// And the state the rerun left is whole: a third run has
		// nothing to do.
		sr = one(t, mustSync(t, ts.base, syncOpts(t, dest)))
		if sr.Failed != 0 || sr.Fetched != 0 || sr.Deleted != 0 {
			t.Fatalf("trial %d: third run: %+v", trial, sr)
		}
	}
}

// TestConcurrentFreshOpens: runs that start together on a new DEST
// create one state between them; one holds it, the others are refused
// with ErrLocked, and the state the holder leaves is whole.
func TestConcurrentFreshOpens(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("a"))
	ts := startSource(t, dir, nil, nil)
	for trial := range 5 {
		dest := t.TempDir()
		const n = 3
		var wg sync.WaitGroup
		ms := make([]*destination.Mirror, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ms[i], errs[i] = destination.Open(context.Background(), ts.base, syncOpts(t, dest))
			}()
		}
		wg.Wait()
		held := 0
		for i := range n {
			switch {
			case errs[i] == nil:
				held++
				if _, err := ms[i].Sync(context.Background()); err != nil {
					t.Fatalf("trial %d: sync of the holder: %v", trial, err)
				}
				ms[i].Close()
			case !errors.Is(errs[i], destination.ErrLocked):
				t.Fatalf("trial %d: %v, want ErrLocked", trial, errs[i])
			}
		}
		if held != 1 {
			t.Fatalf("trial %d: %d runs held the new state", trial, held)
		}
		sameTree(t, dir, dest)
		if sr := one(t, mustSync(t, ts.base, syncOpts(t, dest))); sr.Fetched != 0 || sr.Failed != 0 {
			t.Fatalf("trial %d: run after: %+v", trial, sr)
		}
	}
}
