package scan_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

const (
	crashRootEnv  = "RESOURCESYNC_CRASH_ROOT"
	crashStateEnv = "RESOURCESYNC_CRASH_STATE"
)

// TestCrashChild is the helper process of TestCrash: it changes the
// directory at random and scans it, in a loop, until it is killed. It
// prints "scan" before and "done" after each scan.
func TestCrashChild(t *testing.T) {
	root := os.Getenv(crashRootEnv)
	if root == "" {
		t.Skip("helper process for TestCrash")
	}
	db, err := bolt.Open(os.Getenv(crashStateEnv), &bolt.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	s, err := scan.New(scan.Options{Root: root, Store: db, BatchSize: 16,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(time.Now().UnixNano())))
	for {
		mutate(root, rng, 60)
		fmt.Println("scan")
		if _, err := s.Scan(context.Background()); err != nil {
			fmt.Println("scan error:", err)
			os.Exit(3)
		}
		fmt.Println("done")
	}
}

// mutate makes n random changes under root: creates, rewrites (same or
// different size), deletes, renames and touches.
func mutate(root string, rng *rand.Rand, n int) {
	var files []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.Contains(p, "/.") {
			files = append(files, p)
		}
		return nil
	})
	content := func() []byte {
		b := make([]byte, rng.IntN(4096))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	newName := func() string {
		return filepath.Join(root, fmt.Sprintf("d%d", rng.IntN(8)), fmt.Sprintf("f %06d%s", rng.IntN(1000000), []string{"", ".txt", "#x", "\xff"}[rng.IntN(4)]))
	}
	for range n {
		op := rng.IntN(5)
		if len(files) == 0 {
			op = 0
		}
		var f string
		if len(files) > 0 {
			f = files[rng.IntN(len(files))]
		}
		switch op {
		case 0:
			p := newName()
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, content(), 0o644)
			files = append(files, p)
		case 1:
			os.WriteFile(f, content(), 0o644)
		case 2:
			os.Remove(f)
		case 3:
			p := newName()
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.Rename(f, p)
		case 4:
			t := time.Now().Add(time.Duration(rng.IntN(1000)) * time.Second)
			os.Chtimes(f, t, t)
		}
	}
}

// TestCrash kills a process that scans in a loop (kill -9 at random
// moments, mostly in the middle of a scan), then checks that the state it
// left is consistent on its own (the journal's replay equals the inventory)
// and that one more scan makes the inventory equal the directory.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	statePath := filepath.Join(dir, "state.db")
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	for i := range 300 {
		write(t, root, fmt.Sprintf("d%d/seed %03d", i%8, i), strings.Repeat("x", i*7))
	}

	const trials = 12
	midScan := 0
	var lastSeq uint64
	for i := range trials {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashRootEnv+"="+root, crashStateEnv+"="+statePath)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan []string, 1)
		started := make(chan struct{}, 100)
		go func() {
			var ls []string
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				ls = append(ls, sc.Text())
				if sc.Text() == "scan" {
					select {
					case started <- struct{}{}:
					default:
					}
				}
			}
			lines <- ls
		}()
		if i%2 == 0 {
			// At a random moment.
			time.Sleep(time.Duration(100+rng.IntN(600)) * time.Millisecond)
		} else {
			// A few milliseconds into the k-th scan, when batches are
			// being committed.
			for range 1 + rng.IntN(3) {
				select {
				case <-started:
				case <-time.After(5 * time.Second):
					t.Fatal("child does not scan")
				}
			}
			time.Sleep(time.Duration(rng.IntN(20000)) * time.Microsecond)
		}
		cmd.Process.Kill() // SIGKILL
		cmd.Wait()
		ls := <-lines
		for _, l := range ls {
			if l != "scan" && l != "done" {
				t.Fatalf("trial %d: child said %q", i, l)
			}
		}
		if len(ls) > 0 && ls[len(ls)-1] == "scan" {
			midScan++
		}

		ctx := context.Background()
		db, err := bolt.Open(statePath, &bolt.Options{LockTimeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("trial %d: reopening the state: %v", i, err)
		}
		if err := storetest.CheckReplay(ctx, db); err != nil {
			t.Errorf("trial %d: state left by kill -9: %v", i, err)
		}
		s, _ := scan.New(scan.Options{Root: root, Store: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if _, err := s.Scan(ctx); err != nil {
			t.Fatalf("trial %d: scan after the crash: %v", i, err)
		}
		checkInventory(t, db, root, nil)
		st, _ := db.Stats(ctx)
		t.Logf("trial %d: %d scans started, killed mid-scan: %v; journal %d records, %d resources",
			i, strings.Count(strings.Join(ls, "\n"), "scan"), len(ls) > 0 && ls[len(ls)-1] == "scan", st.LastSeq, st.Resources)
		if st.LastSeq < lastSeq {
			t.Fatalf("journal shrank from %d to %d", lastSeq, st.LastSeq)
		}
		lastSeq = st.LastSeq
		db.Close()
		if t.Failed() {
			return
		}
	}
	if midScan == 0 {
		t.Errorf("no kill landed in the middle of a scan in %d trials", trials)
	}
}
