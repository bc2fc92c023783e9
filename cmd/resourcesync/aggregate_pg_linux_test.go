package main

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	stdmaps "maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/pgstore"
	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/source"
)

// aggPGSource is one in-process ResourceSync Source on loopback whose
// every response is delayed, so that a run lasts a while (a node killed
// at a random moment is likely to be in the middle of some).
type aggPGSource struct {
	id, url, dir string
	src          *source.Source
}

func startAggPGSources(t *testing.T, n int, delay time.Duration) []*aggPGSource {
	t.Helper()
	var out []*aggPGSource
	for i := range n {
		s := &aggPGSource{id: fmt.Sprintf("m/%02d", i), dir: t.TempDir()}
		for k := range 4 {
			if err := os.WriteFile(filepath.Join(s.dir, fmt.Sprintf("f%d.txt", k)), fmt.Appendf(nil, "source %d file %d v1", i, k), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		srv := httptest.NewUnstartedServer(nil)
		s.url = "http://" + srv.Listener.Addr().String() + "/"
		var err error
		s.src, err = source.Open(source.Config{BaseURL: s.url, Sets: []source.SetConfig{{Name: "default", Dir: s.dir}},
			StateDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.src.Update(context.Background()); err != nil {
			t.Fatal(err)
		}
		h := s.src.Handler(nil)
		srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(delay)
			h.ServeHTTP(w, r)
		})
		srv.Start()
		t.Cleanup(func() { srv.Close(); s.src.Close() })
		out = append(out, s)
	}
	return out
}

// aggPGTree returns the regular files under dir (hidden names skipped:
// the mirror's .resourcesync state), by slash path.
func aggPGTree(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	return out, err
}

type aggPGNode struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// TestAggregatePostgresTwoNodes: two `resourcesync aggregate --store
// postgres://...` processes (a, then b joining) on one database and one
// --root (two nodes on a shared volume) split 12 Sources; a is killed
// with SIGKILL in the middle of some of its runs; b takes its Sources
// once a's leases expire. From the run history in PostgreSQL:
//
//  1. before the kill each node held half the Sources and ran them;
//  2. no two runs of a Source overlap in time, and before the kill a
//     Source's runs change hands at most once, from a to b (the split
//     when b joined): never back and forth;
//  3. b's first run of each of a's Sources starts after a's lease on it
//     expired and before kill + LeaseTTL + margin, where margin is one
//     tick of b's lease keeper (LeaseTTL/3: b claims at its first round
//     after the expiry) plus one more tick of slack for that round's
//     transactions and the run's start on a loaded machine;
//  4. a's runs that were running at the kill ended interrupted, none ok;
//  5. after a change at every Source made after the kill, every mirror
//     equals its Source byte for byte.
func TestAggregatePostgresTwoNodes(t *testing.T) {
	pgtest.Skip(t)
	const (
		n     = 12
		lease = 3 * time.Second
		tick  = lease / 3 // the lease keeper's round
	)
	margin := tick + tick
	db := pgtest.Database(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store, err := pgstore.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	srcs := startAggPGSources(t, n, 100*time.Millisecond)
	var lines strings.Builder
	for _, s := range srcs {
		fmt.Fprintf(&lines, "%s %s\n", s.url, s.id)
	}
	sourcesFile := filepath.Join(t.TempDir(), "sources.txt")
	if err := os.WriteFile(sourcesFile, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()

	start := func(name string) *aggPGNode {
		nd := &aggPGNode{name: name, log: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
		nd.cmd = memCmd("aggregate", "--sources", sourcesFile, "--store", db, "--node", name,
			"--lease", lease.String(), "--poll-interval", "1s", "--root", root, "--listen", freeAddr(t),
			"--workers", "16", "--run-timeout", "30s")
		f, err := os.Create(nd.log)
		if err != nil {
			t.Fatal(err)
		}
		nd.cmd.Stdout, nd.cmd.Stderr = f, f
		if err := nd.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		go func() { nd.cmd.Wait(); close(nd.done) }()
		t.Cleanup(func() {
			nd.cmd.Process.Kill()
			<-nd.done
			if t.Failed() {
				b, _ := os.ReadFile(nd.log)
				if len(b) > 6000 {
					b = b[len(b)-6000:]
				}
				t.Logf("node %s log (tail):\n%s", name, b)
			}
		})
		return nd
	}
	holders := func() map[string]string {
		ls, err := store.Leases(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, l := range ls {
			out[l.Source] = l.Node
		}
		return out
	}
	count := func(h map[string]string) map[string]int {
		out := map[string]int{}
		for _, node := range h {
			out[node]++
		}
		return out
	}
	newest := func(id string) (aggstore.Run, bool) {
		rs, err := store.Runs(ctx, id, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 {
			return aggstore.Run{}, false
		}
		return rs[0], true
	}

	a := start("a")
	waitFor(t, "node a to hold every Source", 30*time.Second, func() bool { return count(holders())["a"] == n })
	b := start("b")
	waitFor(t, "the split, six and six", 30*time.Second, func() bool {
		c := count(holders())
		return c["a"] == n/2 && c["b"] == n/2
	})
	held := holders()
	// (1) Each node runs what it holds: wait for a finished run of every
	// Source by its holder.
	waitFor(t, "a run of every Source by its holder", 30*time.Second, func() bool {
		for id, node := range held {
			rs, err := store.Runs(ctx, id, 0)
			if err != nil {
				t.Fatal(err)
			}
			ok := false
			for _, r := range rs {
				ok = ok || (r.Node == node && r.State == aggstore.StateOK)
			}
			if !ok {
				return false
			}
		}
		return true
	})
	if h := holders(); !stdmaps.Equal(h, held) {
		t.Fatalf("holders changed while both nodes ran: %v, then %v", held, h)
	}

	// Kill a in the middle of a run of its.
	var runningAtKill []aggstore.Run
	waitFor(t, "a run of node a in progress", 30*time.Second, func() bool {
		runningAtKill = nil
		for id, node := range held {
			if node != "a" {
				continue
			}
			if r, ok := newest(id); ok && r.Node == "a" && r.State == aggstore.StateRunning {
				runningAtKill = append(runningAtKill, r)
			}
		}
		return len(runningAtKill) > 0
	})
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	killed := time.Now()
	// a's leases, still live: the earliest b may take each.
	expires := map[string]time.Time{}
	ls, err := store.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if l.Node == "a" {
			expires[l.Source] = l.Expires
		}
	}
	if len(expires) != n/2 {
		t.Fatalf("after the kill %d live leases of a, want %d (taken over before they expired?): %v", len(expires), n/2, ls)
	}

	// b takes and runs every Source of a.
	waitFor(t, "b to run a's Sources", 30*time.Second, func() bool {
		for id := range expires {
			if r, ok := newest(id); !ok || r.Node != "b" {
				return false
			}
		}
		return count(holders())["b"] == n
	})

	// (5) A change at every Source after the kill.
	for i, s := range srcs {
		os.WriteFile(filepath.Join(s.dir, "f1.txt"), fmt.Appendf(nil, "source %d file 1 v2, after the kill", i), 0o644)
		os.WriteFile(filepath.Join(s.dir, "new.txt"), fmt.Appendf(nil, "source %d new", i), 0o644)
		os.Remove(filepath.Join(s.dir, "f0.txt"))
		if _, err := s.src.Update(ctx); err != nil {
			t.Fatal(err)
		}
	}
	changed := time.Now()
	var diff string
	waitFor(t, "every mirror to equal its Source", 30*time.Second, func() bool {
		diff = ""
		for _, s := range srcs {
			want, err := aggPGTree(s.dir)
			if err != nil {
				t.Fatal(err)
			}
			got, err := aggPGTree(filepath.Join(root, filepath.FromSlash(s.id)))
			if err != nil || !stdmaps.Equal(got, want) {
				diff = fmt.Sprintf("%s: mirror %v (%v), Source %v", s.id, got, err, want)
				return false
			}
		}
		return true
	})
	t.Logf("every mirror equals its Source %v after the change", time.Since(changed).Round(time.Millisecond))

	// b stops on SIGTERM as sync --follow does.
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(30 * time.Second):
		t.Fatal("b did not stop on SIGTERM")
	}
	if code := b.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("b exit %d after SIGTERM", code)
	}

	// The run history.
	wasRunning := map[int64]bool{}
	for _, r := range runningAtKill {
		wasRunning[r.ID] = true
	}
	interrupted, perNodeRuns := 0, map[string]int{}
	var takeovers []time.Duration
	for _, s := range srcs {
		rs, err := store.Runs(ctx, s.id, 0)
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(rs, func(i, k int) bool { return rs[i].ID < rs[k].ID })
		aggPGRunsApart(t, s.id, rs)
		var pre []string
		var firstB *aggstore.Run
		for i, r := range rs {
			perNodeRuns[r.Node]++
			switch {
			case r.Node == "a" && wasRunning[r.ID]:
				// (4)
				if r.State != aggstore.StateInterrupted {
					t.Errorf("%s: run %d of a, running at the kill, ended %s", s.id, r.ID, r.State)
				}
				interrupted++
			case r.Node == "a" && !r.End.Before(killed) && r.State != aggstore.StateInterrupted:
				// Running at the kill, started after the look above.
				t.Errorf("%s: run %d of a ended %s at %v, after the kill (%v)", s.id, r.ID, r.State, r.End, killed)
			case r.Node == "a" && !r.End.Before(killed):
				interrupted++
			}
			if r.Node == "a" && !r.Start.Before(killed) {
				t.Errorf("%s: run %d of a started after the kill", s.id, r.ID)
			}
			if r.Start.Before(killed) {
				if len(pre) == 0 || pre[len(pre)-1] != r.Node {
					pre = append(pre, r.Node)
				}
			} else if firstB == nil && r.Node == "b" {
				firstB = &rs[i]
			}
		}
		// (2) before the kill: a's runs, then (after the split) b's.
		if p := strings.Join(pre, ","); p != "a" && p != "a,b" && p != "b" {
			t.Errorf("%s: before the kill runs changed hands %s", s.id, p)
		}
		// (3)
		exp, wasA := expires[s.id]
		if !wasA {
			continue
		}
		if firstB == nil {
			t.Errorf("%s: a's Source never run by b after the kill", s.id)
			continue
		}
		if firstB.Start.Before(exp) {
			t.Errorf("%s: b's run %d started at %v, before a's lease expired (%v)", s.id, firstB.ID, firstB.Start, exp)
		}
		if limit := killed.Add(lease + margin); !firstB.Start.Before(limit) {
			t.Errorf("%s: b's first run started %v after the kill, not within lease %v + margin %v", s.id, firstB.Start.Sub(killed), lease, margin)
		}
		takeovers = append(takeovers, firstB.Start.Sub(killed))
	}
	if perNodeRuns["a"] == 0 || perNodeRuns["b"] == 0 {
		t.Errorf("runs per node %v: the Sources were not split", perNodeRuns)
	}
	if interrupted == 0 {
		t.Errorf("no run of a was interrupted by the kill (running then: %v)", runningAtKill)
	}
	sort.Slice(takeovers, func(i, k int) bool { return takeovers[i] < takeovers[k] })
	if len(takeovers) > 0 {
		t.Logf("runs per node %v; %d runs of a interrupted by the kill; b's first runs of a's %d Sources started %v to %v after the kill (lease %v, tick %v)",
			perNodeRuns, interrupted, len(takeovers), takeovers[0].Round(time.Millisecond), takeovers[len(takeovers)-1].Round(time.Millisecond), lease, tick)
	}
	if diff != "" {
		t.Log(diff)
	}
}

// aggPGRunsApart fails t unless a Source's runs (by ID) all ended and
// never overlap in time, whichever node ran them.
func aggPGRunsApart(t *testing.T, id string, rs []aggstore.Run) {
	t.Helper()
	rs = append([]aggstore.Run(nil), rs...)
	sort.Slice(rs, func(i, k int) bool { return rs[i].Start.Before(rs[k].Start) })
	for i, r := range rs {
		if r.State == aggstore.StateRunning || r.End.IsZero() || r.End.Before(r.Start) {
			t.Errorf("%s: run %d of %s: %s [%v, %v]", id, r.ID, r.Node, r.State, r.Start, r.End)
			continue
		}
		if i > 0 && r.Start.Before(rs[i-1].End) {
			p := rs[i-1]
			t.Errorf("%s: run %d of %s [%s, %s] overlaps run %d of %s [%s, %s]", id,
				r.ID, r.Node, r.Start.Format(time.RFC3339Nano), r.End.Format(time.RFC3339Nano),
				p.ID, p.Node, p.Start.Format(time.RFC3339Nano), p.End.Format(time.RFC3339Nano))
		}
	}
}
