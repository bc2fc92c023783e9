package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	stdmaps "maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/pgstore"
	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/source"
)

// gatedSource is a ResourceSync Source on loopback that answers freely
// until it has served open resources; from then on every request (a
// resource, a capability document) waits until the test opens the gate.
type gatedSource struct {
	url, dir string
	served   atomic.Int32
	waiting  atomic.Int32
	gate     chan struct{}
}

func startGatedSource(t *testing.T, files, open int) *gatedSource {
	t.Helper()
	g := &gatedSource{dir: t.TempDir(), gate: make(chan struct{})}
	for k := range files {
		if err := os.WriteFile(filepath.Join(g.dir, fmt.Sprintf("f%02d.txt", k)), fmt.Appendf(nil, "file %d", k), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewUnstartedServer(nil)
	g.url = "http://" + srv.Listener.Addr().String() + "/"
	src, err := source.Open(source.Config{BaseURL: g.url, Sets: []source.SetConfig{{Name: "default", Dir: g.dir}}, NoBulk: true, // the gate counts GETs of .txt files
		StateDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := src.Handler(nil)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.served.Load() >= int32(open) {
			g.waiting.Add(1)
			select {
			case <-g.gate:
			case <-r.Context().Done():
				g.waiting.Add(-1)
				return
			}
			g.waiting.Add(-1)
		}
		if strings.HasSuffix(r.URL.Path, ".txt") {
			g.served.Add(1)
		}
		h.ServeHTTP(w, r)
	})
	srv.Start()
	t.Cleanup(func() {
		select {
		case <-g.gate:
		default:
			close(g.gate)
		}
		srv.Close()
		src.Close()
	})
	return g
}

// fileSum is a file's SHA-256 ("" when it cannot be read).
func fileSum(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// TestAggregateFencedAfterSIGSTOP: two aggregate processes share a
// PostgreSQL store and a --root. Node a runs the one Source, whose
// answers stop after a few files (the downloads under way wait); a is
// frozen with SIGSTOP past its lease, and b takes the Source over (b's
// run waits at the Source too, so nothing but a could write). Then a is
// resumed with SIGCONT: its run is fenced. Until it lets DEST go:
//
//  1. DEST's state (state.db) is byte for byte what it was when a was
//     frozen: no commit of a batch, no checkpoint, no end-of-run mark
//     after the takeover (on main a's run went on until its next lease
//     round and recorded its batch and its end);
//  2. no file of DEST was added, changed or removed.
//
// Then the Source answers again: b's run makes the mirror equal to the
// Source; in the run history a's run ended interrupted, none of a's runs
// after the freeze ended ok, and no two runs overlap.
func TestAggregateFencedAfterSIGSTOP(t *testing.T) {
	pgtest.Skip(t)
	const lease = 2 * time.Second
	db := pgtest.Database(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store, err := pgstore.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	g := startGatedSource(t, 20, 6)
	sourcesFile := filepath.Join(t.TempDir(), "sources.txt")
	if err := os.WriteFile(sourcesFile, []byte(g.url+" m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dest := filepath.Join(root, "m")
	stateDB := filepath.Join(dest, ".resourcesync", "state.db")
	node := func(name string) *proc {
		return startProc(t, "aggregate", "--sources", sourcesFile, "--store", db, "--node", name,
			"--lease", lease.String(), "--poll-interval", "1h", "--root", root, "--listen", freeAddr(t),
			"--workers", "2", "--source-workers", "2", "--run-timeout", "2m")
	}
	holder := func() aggstore.Lease {
		ls, err := store.Leases(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if l.Source == "m" {
				return l
			}
		}
		return aggstore.Lease{}
	}

	a := node("a")
	waitFor(t, "a's run stuck at the Source after 6 files", 30*time.Second, func() bool {
		return holder().Node == "a" && g.served.Load() >= 6 && g.waiting.Load() > 0
	})
	aEpoch := holder().Epoch
	// Let a commit what it installed (a batch a second), so that its
	// run has written the state before the freeze.
	time.Sleep(1500 * time.Millisecond)
	b := node("b")
	time.Sleep(lease / 2) // b's first lease rounds: a holds the Source

	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			a.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	waitFor(t, "b to take the Source over", 60*time.Second, func() bool { return holder().Node == "b" })
	bEpoch := holder().Epoch
	if bEpoch <= aEpoch {
		t.Errorf("b's epoch %d is not after a's %d", bEpoch, aEpoch)
	}
	waitFor(t, "b's run waiting at the Source", 10*time.Second, func() bool { return g.waiting.Load() > 2 })
	before := fileSum(stateDB)
	filesBefore, err := aggPGTree(dest)
	if err != nil || before == "" {
		t.Fatalf("DEST before the resume: %v (state %q)", err, before)
	}

	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	// a lets DEST go (its run ended): the state's lock is free, and b
	// cannot take it yet (its run waits at the Source).
	waitFor(t, "a to let DEST go", 20*time.Second, func() bool {
		f, err := os.Open(stateDB)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			return false
		}
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return true
	})
	if after := fileSum(stateDB); after != before {
		t.Errorf("(1) a's fenced run wrote DEST's state after b took the Source over (state.db changed)")
	}
	filesAfter, err := aggPGTree(dest)
	if err != nil {
		t.Fatal(err)
	}
	if !stdmaps.Equal(filesAfter, filesBefore) {
		t.Errorf("(2) a's fenced run changed DEST's files after the takeover: %d files, then %d", len(filesBefore), len(filesAfter))
	}

	close(g.gate)
	want, err := aggPGTree(g.dir)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	waitFor(t, "b's run to make the mirror equal the Source", 60*time.Second, func() bool {
		got, _ = aggPGTree(dest)
		return stdmaps.Equal(got, want)
	})

	var rs []aggstore.Run
	waitFor(t, "b's run to end", 30*time.Second, func() bool {
		rs, err = store.Runs(ctx, "m", 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(rs) > 0 && rs[0].Node == "b" && rs[0].State != aggstore.StateRunning
	})
	var aRuns, bOK int
	for _, r := range rs {
		switch {
		case r.Node == "a":
			aRuns++
			if r.Epoch == aEpoch && r.State != aggstore.StateInterrupted {
				t.Errorf("a's run %d under the frozen epoch ended %s (%s), want interrupted", r.ID, r.State, r.Error)
			}
			if r.State == aggstore.StateOK && !r.End.Before(stopped) {
				t.Errorf("a's run %d ended ok after the freeze: %+v", r.ID, r)
			}
		case r.State == aggstore.StateOK:
			bOK++
		}
	}
	if aRuns == 0 || bOK == 0 {
		t.Errorf("runs: %d of a, %d ok of b: %+v", aRuns, bOK, rs)
	}
	aggPGRunsApart(t, "m", rs)
	if !strings.Contains(a.out.String(), "fenced") {
		t.Errorf("a's output does not tell its run was fenced:\n%s", a.tail())
	}
	if t.Failed() {
		t.Logf("a:\n%s\nb:\n%s", a.tail(), b.tail())
	}
}

// TestAggregateNodeInUse: a second aggregate process on the same store
// under the same node name (the default, the host name, for two
// processes on one host) is refused, naming --node, once the first has
// shown itself alive for a lease time; the first goes on holding its
// Source.
func TestAggregateNodeInUse(t *testing.T) {
	pgtest.Skip(t)
	const lease = time.Second
	db := pgtest.Database(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := pgstore.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one"), 0o644)
	src, _ := serveDir(t, dir)
	sourcesFile := filepath.Join(t.TempDir(), "sources.txt")
	writeSources(t, sourcesFile, src+" one\n")
	root := t.TempDir()
	start := func() *proc {
		// No --node: both take the host name.
		return startProc(t, "aggregate", "--sources", sourcesFile, "--store", db, "--lease", lease.String(),
			"--poll-interval", "1h", "--root", root, "--listen", freeAddr(t))
	}
	first := start()
	waitFor(t, "the first process to mirror the Source", 30*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(root, "one", "a.txt"))
		return err == nil && string(b) == "one"
	})
	second := start()
	code, ok := second.wait(20 * time.Second)
	if !ok {
		t.Fatalf("the second process under the same node name still runs after 20 s:\n%s", second.tail())
	}
	if code != exitUsage || !strings.Contains(second.out.String(), "--node") {
		t.Errorf("second process: exit %d, want %d and a message naming --node:\n%s", code, exitUsage, second.tail())
	}
	if first.exited() {
		t.Fatalf("the first process exited:\n%s", first.tail())
	}
	host, _ := os.Hostname()
	ls, err := store.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].Node != host {
		t.Errorf("leases after the refusal: %+v, want the Source held by %q", ls, host)
	}
	if code, ok := first.interrupt(20 * time.Second); !ok || code != 0 {
		t.Errorf("first process after Ctrl-C: exited %v, code %d:\n%s", ok, code, first.tail())
	}
}
