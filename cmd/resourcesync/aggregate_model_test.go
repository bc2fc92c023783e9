//go:build unix

package main

// TestAggregateModel is the seeded, model-based test of `aggregate` under
// kill -9 (issue 22): a few real Sources (`serve --watch`, on loopback),
// a sources file mixing polled and --follow lines, and one aggregator
// (`aggregate --json`, a child of the test binary as in TestModel) driven
// through a random history: files created, updated and deleted at random
// Sources, lines removed from and added back to the sources file (a new
// file renamed over the old), SIGHUP, kill -9 of the aggregator at random
// moments (after a random delay, or right after a run-start event, in the
// middle of a run) and restarts, SIGTERM (exit 0) and restarts.
//
// At every settle point each listed Source's mirror equals the Source's
// directory byte for byte (.resourcesync aside), and a removed line's
// mirror stays as it was when the aggregator dropped it (never deleted,
// never synced). At the end, with the aggregator stopped, the run history
// in ROOT/.aggregate/aggregate.db says: every run has one final state (ok,
// failed or interrupted) and one ID; the runs that were running when the
// aggregator was killed are interrupted; every run-end event of the --json
// outputs has the state the store has; the ok runs of the store are
// exactly the run-end events with status ok, but for a run the store
// committed ok in the instant before a kill -9, before its event was
// printed (allowed only for a run running at a kill, and counted).
//
//	go test ./cmd/resourcesync -run '^TestAggregateModel$' -count=1 -v
//	RESOURCESYNC_AGG_MODEL_SEED=7 RESOURCESYNC_AGG_MODEL_STEPS=60 go test ./cmd/resourcesync -run '^TestAggregateModel$' -count=1 -v -timeout=0
//	RESOURCESYNC_AGG_MODEL_N=20 ...   # 20 histories, seeds SEED, SEED+1, ...
//
// A failing history logs its steps and the line that reproduces it; as in
// TestModel the seed fixes every choice but not the processes' scheduling
// (RESOURCESYNC_AGG_MODEL_OUT=DIR keeps the aggregators' whole outputs of
// a failure). A file a killed run installed but did not record, which
// the Source deleted since, fails the history as an "orphan" (the
// Destination's intents make it the tool's own, so it is deleted).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/boltstore"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/pgstore"
	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/testing/sparqltest"
)

func envUint(t *testing.T, name string, def uint64) uint64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

func TestAggregateModel(t *testing.T) {
	if testing.Short() {
		t.Skip("model-based test of real processes: runs without -short")
	}
	seed := envUint(t, "RESOURCESYNC_AGG_MODEL_SEED", 1)
	n := envUint(t, "RESOURCESYNC_AGG_MODEL_N", 1)
	// The aggregators dial loopback only (TestModelChild).
	t.Setenv("RS_MODEL_AGG_LOOPBACK", "1")
	steps := int(envUint(t, "RESOURCESYNC_AGG_MODEL_STEPS", 25))
	for i := range n {
		t.Run(fmt.Sprint("seed=", seed+i), func(t *testing.T) {
			h := newAggHistory(t, seed+i, steps)
			h.run()
		})
	}
}

// aggSource is one Source of the history.
type aggSource struct {
	dest   string // its DEST under the root, and its ID
	dir    string // the directory it serves
	state  string // serve --state
	base   string
	serve  *proc
	follow bool
	poll   string
	// listed: its line is in the sources file.
	listed bool
	// frozen is the mirror a removed line left (nil while listed, or
	// while the aggregator has not dropped it yet).
	frozen map[string][]byte
	// sdshare: an SDShare collection (TestAggregateModelPG), whose
	// resources are triples (id -> value) and whose mirror is a graph.
	sdshare bool
	triples map[string]string
}

// aggRun is what one aggregator process (an incarnation) printed about a
// run.
type aggRun struct {
	inc     int
	source  string
	started bool
	ended   string // run-end status ("" none)
}

type aggHistory struct {
	t       *testing.T
	seed    uint64
	steps   int
	rng     *rand.Rand
	root    string
	sources string // the sources file
	listen  string
	srcs    []*aggSource
	agg     *proc
	inc     int
	// procs are every incarnation's process, killed[i] whether it ended
	// with kill -9.
	procs  []*proc
	killed []bool
	// runningAtKill holds the runs the store had running right after a
	// kill -9.
	runningAtKill map[int64]aggRun // run ID -> incarnation, Source
	counter       int
	trace         []string
	stats         map[string]int
	// pg, when set, is the PostgreSQL store of two nodes
	// (TestAggregateModelPG): agg is the node the next action acts on,
	// named node; other is the second one. nodeOf names each
	// incarnation's node.
	pg        string
	node      string
	other     *proc
	otherNode string
	nodeOf    []string
	listen2   string
	// sparql is the graph store of the SDShare line (nil: none).
	sparql *sparqltest.Server
}

func newAggHistory(t *testing.T, seed uint64, steps int) *aggHistory {
	dir := t.TempDir()
	h := &aggHistory{t: t, seed: seed, steps: steps, rng: rand.New(rand.NewPCG(seed, 0xa66)),
		root: filepath.Join(dir, "root"), sources: filepath.Join(dir, "sources.txt"), listen: freeAddr(t),
		runningAtKill: map[int64]aggRun{}, stats: map[string]int{}}
	n := 4 + h.rng.IntN(3)
	for i := range n {
		s := &aggSource{dest: fmt.Sprintf("mirrors/s%d", i), dir: filepath.Join(dir, fmt.Sprintf("src%d", i)),
			state: filepath.Join(dir, fmt.Sprintf("state%d", i)), listed: true}
		// At least one of each kind.
		s.follow = i == 0 || (i > 1 && h.rng.IntN(2) == 0)
		s.poll = []string{"300ms", "700ms", "1500ms"}[h.rng.IntN(3)]
		for _, d := range []string{s.dir, s.state} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		h.srcs = append(h.srcs, s)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("history (seed %d):\n  %s", h.seed, strings.Join(h.trace, "\n  "))
			test := "TestAggregateModel"
			if h.pg != "" {
				test += "PG"
			}
			t.Logf("reproduce: RESOURCESYNC_AGG_MODEL_SEED=%d RESOURCESYNC_AGG_MODEL_STEPS=%d go test ./cmd/resourcesync -run '^%s$' -count=1 -v", h.seed, h.steps, test)
		}
	})
	return h
}

func (h *aggHistory) logf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	h.trace = append(h.trace, s)
	if testing.Verbose() {
		h.t.Logf("%s", s)
	}
}

func (h *aggHistory) fatalf(format string, args ...any) {
	h.t.Helper()
	if h.agg != nil {
		format += "\naggregate (incarnation %d):\n%s"
		args = append(args, h.inc, h.agg.tail())
	}
	if dir := os.Getenv("RESOURCESYNC_AGG_MODEL_OUT"); dir != "" {
		// The whole outputs, for a failure the tails do not explain.
		for i, p := range h.procs {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("aggregate-%d-%d.out", h.seed, i+1)), []byte(p.out.String()), 0o644)
		}
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("sources-%d.txt", h.seed)), must(os.ReadFile(h.sources)), 0o644)
	}
	h.t.Fatalf(format, args...)
}

func (h *aggHistory) run() {
	start := time.Now()
	var kinds []string
	for _, s := range h.srcs {
		for range 2 + h.rng.IntN(5) {
			h.create(s)
		}
		h.startServe(s)
		k := "poll " + s.poll
		switch {
		case s.sdshare:
			k = "sdshare, poll " + s.poll
		case s.follow:
			k = "follow"
		}
		kinds = append(kinds, k)
	}
	h.logf("history %d: %d Sources (%s), %d steps", h.seed, len(h.srcs), strings.Join(kinds, ", "), h.steps)
	h.writeSources()
	if h.pg != "" {
		h.node = "n1"
		h.startAgg()
		h.other, h.otherNode, h.node = h.agg, h.node, "n2"
	}
	h.startAgg()
	h.settle("start")
	for i := range h.steps {
		h.step(i)
	}
	h.logf("final: settle, SIGTERM, check the run history")
	h.settle("final")
	h.stopAgg()
	if h.other != nil {
		h.swap()
		h.stopAgg()
	}
	h.checkStore()
	h.t.Logf("seed %d: %d steps in %s; %s", h.seed, h.steps, time.Since(start).Round(time.Millisecond), h.statLine())
}

func (h *aggHistory) statLine() string {
	var ks []string
	for k := range h.stats {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, "%s=%d ", k, h.stats[k])
	}
	return b.String()
}

func (h *aggHistory) step(i int) {
	if h.other != nil && h.rng.IntN(2) == 0 {
		h.swap()
	}
	type action struct {
		w  int
		fn func()
	}
	actions := []action{
		{30, func() { h.change(h.srcs[h.rng.IntN(len(h.srcs))]) }},
		{8, h.toggleLine},
		{4, h.sighup},
		{12, func() { h.killAfter(time.Duration(h.rng.IntN(1500)) * time.Millisecond) }},
		{14, h.killMidRun},
		{6, h.restartTerm},
		{12, func() { h.settle("settle") }},
	}
	total := 0
	for _, a := range actions {
		total += a.w
	}
	n := h.rng.IntN(total)
	for _, a := range actions {
		if n < a.w {
			h.logf("step %d:", i)
			a.fn()
			return
		}
		n -= a.w
	}
}

// --- the Sources ---

func (h *aggHistory) startServe(s *aggSource) {
	if s.sdshare {
		h.sdServe(s)
		return
	}
	addr := freeAddr(h.t)
	s.base = "http://" + addr + "/"
	s.serve = startProc(h.t, "serve", "--addr", addr, "--watch", "--rescan-interval", "200ms", "--allow-private-callbacks",
		"--allow-empty", "--state", s.state, s.dir)
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(s.serve.out.String(), "change notifications:") {
		if s.serve.exited() || time.Now().After(deadline) {
			h.fatalf("serve %s did not start (exit %d):\n%s", s.dir, s.serve.code, s.serve.tail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *aggHistory) content() []byte {
	h.counter++
	b := fmt.Appendf(nil, "file %d of history %d\n", h.counter, h.seed)
	for range h.rng.IntN(4) {
		b = append(b, bytes.Repeat([]byte{byte('a' + h.rng.IntN(26))}, h.rng.IntN(3000))...)
	}
	return b
}

func (h *aggHistory) create(s *aggSource) string {
	if s.sdshare {
		return h.sdCreate(s)
	}
	h.counter++
	p := fmt.Sprintf("f%03d.txt", h.counter)
	if h.rng.IntN(3) == 0 {
		p = fmt.Sprintf("d%d/%s", h.rng.IntN(3), p)
	}
	h.write(s, p, h.content())
	return p
}

// write replaces a Source's file by a complete new one (renamed over).
func (h *aggHistory) write(s *aggSource, p string, b []byte) {
	abs := filepath.Join(s.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		h.fatalf("%v", err)
	}
	tmp := filepath.Join(filepath.Dir(s.dir), ".tmp-"+filepath.Base(s.dir))
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		h.fatalf("%v", err)
	}
	if err := os.Rename(tmp, abs); err != nil {
		h.fatalf("%v", err)
	}
}

// change creates, updates or deletes 1-3 files of s.
func (h *aggHistory) change(s *aggSource) {
	if s.sdshare {
		h.sdChange(s)
		return
	}
	var did []string
	for range 1 + h.rng.IntN(3) {
		paths := aggPaths(treeOf(s.dir))
		switch r := h.rng.IntN(10); {
		case r < 4 || len(paths) == 0:
			did = append(did, "create "+h.create(s))
		case r < 8:
			p := paths[h.rng.IntN(len(paths))]
			h.write(s, p, h.content())
			did = append(did, "update "+p)
		default:
			if len(paths) < 2 {
				continue
			}
			p := paths[h.rng.IntN(len(paths))]
			if err := os.Remove(filepath.Join(s.dir, filepath.FromSlash(p))); err != nil {
				h.fatalf("%v", err)
			}
			did = append(did, "delete "+p)
		}
	}
	h.logf("  %s (%s): %s", s.dest, h.lineState(s), strings.Join(did, ", "))
	h.stats["changes"]++
}

func (h *aggHistory) lineState(s *aggSource) string {
	switch {
	case s.listed:
		return "listed"
	case s.frozen != nil:
		return "removed"
	}
	return "being removed"
}

// --- the sources file ---

func (h *aggHistory) writeSources() {
	var b strings.Builder
	b.WriteString("# written by TestAggregateModel\n")
	for _, s := range h.srcs {
		if !s.listed {
			continue
		}
		fmt.Fprintf(&b, "%s %s --poll-interval %s", s.base, s.dest, s.poll)
		if s.sdshare {
			b.WriteString(" --sdshare")
		}
		if s.follow {
			b.WriteString(" --follow")
		}
		b.WriteString("\n")
	}
	tmp := h.sources + ".new"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		h.fatalf("%v", err)
	}
	if err := os.Rename(tmp, h.sources); err != nil {
		h.fatalf("%v", err)
	}
}

// toggleLine removes a listed line (while at least two stay) or adds a
// removed one back.
func (h *aggHistory) toggleLine() {
	var listed, removed []*aggSource
	for _, s := range h.srcs {
		if s.sdshare {
			continue // always listed, as it is
		}
		if s.listed {
			listed = append(listed, s)
		} else {
			removed = append(removed, s)
		}
	}
	if h.rng.IntN(3) == 0 {
		// A changed line: the Source restarts with its new options,
		// perhaps in the middle of a run.
		s := listed[h.rng.IntN(len(listed))]
		if h.rng.IntN(2) == 0 {
			s.follow = !s.follow
		} else {
			s.poll = []string{"300ms", "700ms", "1500ms"}[h.rng.IntN(3)]
		}
		h.logf("  change the line of %s: follow %v, --poll-interval %s", s.dest, s.follow, s.poll)
		h.stats["lines changed"]++
		h.writeSources()
		return
	}
	if len(removed) > 0 && (len(listed) <= 2 || h.rng.IntN(2) == 0) {
		s := removed[h.rng.IntN(len(removed))]
		h.logf("  add the line of %s back", s.dest)
		h.stats["lines added"]++
		s.listed, s.frozen = true, nil
		h.writeSources()
		if h.rng.IntN(2) == 0 {
			h.ready("")
			h.logf("  SIGHUP")
			h.agg.cmd.Process.Signal(syscall.SIGHUP)
		}
		return
	}
	s := listed[h.rng.IntN(len(listed))]
	// The mirror a removal leaves is the Source as the aggregator last
	// synced it: settle it first, so that what it leaves is known.
	h.logf("  remove the line of %s", s.dest)
	h.stats["lines removed"]++
	h.settleOne(s, "before its removal")
	// An aggregator that had not read the file yet would never have it.
	h.ready(s.dest)
	mark, markOther := len(h.agg.out.String()), 0
	if h.other != nil {
		// Both nodes: the mirror is frozen once neither runs the line.
		h.swap()
		h.ready("")
		h.swap()
		markOther = len(h.other.out.String())
	}
	s.listed = false
	h.writeSources()
	if h.rng.IntN(2) == 0 {
		h.logf("  SIGHUP")
		h.agg.cmd.Process.Signal(syscall.SIGHUP)
	}
	dropped := func(e aggregate.Event) bool {
		return e.Kind == aggregate.EventSourceRemoved && e.Source == s.dest
	}
	h.waitEvent(mark, dropped, "source-removed of "+s.dest)
	if h.other != nil {
		h.swap()
		h.waitEvent(markOther, dropped, "source-removed of "+s.dest+" by node "+h.node)
		h.swap()
	}
	s.frozen = treeOf(filepath.Join(h.root, s.dest))
}

func (h *aggHistory) sighup() {
	h.logf("  SIGHUP")
	h.stats["SIGHUP"]++
	h.ready("")
	h.agg.cmd.Process.Signal(syscall.SIGHUP)
}

// --- the aggregator ---

func (h *aggHistory) startAgg() {
	h.inc++
	listen := h.listen
	if h.node == "n2" {
		// Each node its own callback address, the same across its
		// incarnations (as h.listen for one node).
		if h.listen2 == "" {
			h.listen2 = freeAddr(h.t)
		}
		listen = h.listen2
	}
	args := []string{"aggregate", "--sources", h.sources, "--root", h.root, "--json", "--reload", "200ms",
		"--listen", listen, "--workers", "3", "--per-host", "2", "--poll-interval", "1s"}
	if h.pg != "" {
		args = append(args, "--store", h.pg, "--node", h.node, "--lease", "3s")
	}
	if h.sparql != nil {
		args = append(args, "--sparql-update", h.sparql.UpdateURL, "--sparql-query", h.sparql.QueryURL,
			"--sparql-graph-store", h.sparql.GraphStoreURL)
	}
	h.agg = startProc(h.t, args...)
	h.procs = append(h.procs, h.agg)
	h.killed = append(h.killed, false)
	h.nodeOf = append(h.nodeOf, h.node)
	h.logf("  aggregator incarnation %d started%s", h.inc, prefixed(" as node ", h.node))
}

// swap makes the other node the one the next actions act on.
func (h *aggHistory) swap() {
	h.agg, h.other = h.other, h.agg
	h.node, h.otherNode = h.otherNode, h.node
}

// killAfter kills the aggregator (SIGKILL) after d, restarts it.
func (h *aggHistory) killAfter(d time.Duration) {
	if h.rng.IntN(2) == 0 {
		// Give it something to do.
		h.change(h.srcs[h.rng.IntN(len(h.srcs))])
	}
	time.Sleep(d)
	h.logf("  kill -9 the aggregator after %s", d)
	h.kill()
}

// killMidRun changes a listed Source and kills the aggregator as soon as
// a run starts (of any Source), after a random few milliseconds.
func (h *aggHistory) killMidRun() {
	mark := len(h.agg.out.String())
	var listed []*aggSource
	for _, s := range h.srcs {
		if s.listed {
			listed = append(listed, s)
		}
	}
	if s := listed[h.rng.IntN(len(listed))]; h.rng.IntN(3) == 0 {
		// A burst: a longer run, killed in the middle of its downloads.
		n := 10 + h.rng.IntN(20)
		for range n {
			h.create(s)
		}
		h.logf("  %s: a burst of %d new files", s.dest, n)
		h.stats["bursts"]++
	} else {
		h.change(s)
	}
	delay := time.Duration(h.rng.IntN(40)) * time.Millisecond
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && !h.agg.exited() {
		if id, ok := h.runStartAfter(mark); ok {
			time.Sleep(delay)
			h.logf("  kill -9 the aggregator %s after the start of run %d", delay, id)
			h.stats["kill -9 in a run"]++
			h.kill()
			return
		}
		time.Sleep(time.Millisecond)
	}
	h.logf("  kill -9 the aggregator (no run started within 5 s)")
	h.kill()
}

func (h *aggHistory) runStartAfter(mark int) (int64, bool) {
	out := h.agg.out.String()[mark:]
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, `"run-start"`) {
			continue
		}
		var e aggregate.Event
		if json.Unmarshal([]byte(line), &e) == nil && e.Kind == aggregate.EventRunStart && e.Run != nil {
			return e.Run.ID, true
		}
	}
	return 0, false
}

func (h *aggHistory) kill() {
	h.stats["kill -9"]++
	if h.agg.exited() {
		h.fatalf("the aggregator exited by itself (%d)", h.agg.code)
	}
	h.agg.kill()
	h.killed[len(h.killed)-1] = true
	// The store's runs still running are the ones the kill cut.
	st := h.openStore()
	for _, s := range h.srcs {
		runs, err := st.Runs(context.Background(), s.dest, 0)
		if err != nil {
			h.fatalf("runs of %s: %v", s.dest, err)
		}
		for _, r := range runs {
			if r.State == aggstore.StateRunning && (h.pg == "" || r.Node == h.node) {
				h.runningAtKill[r.ID] = aggRun{inc: len(h.procs), source: r.Source}
				h.logf("  run %d of %s (%s) was running", r.ID, s.dest, r.Mode)
			}
		}
	}
	st.Close()
	h.startAgg()
}

// restartTerm stops the aggregator with SIGTERM (exit 0) and starts it
// again.
func (h *aggHistory) restartTerm() {
	h.logf("  SIGTERM the aggregator, restart")
	h.stopAgg()
	h.startAgg()
}

func (h *aggHistory) stopAgg() {
	h.stats["SIGTERM"]++
	h.ready("")
	h.agg.cmd.Process.Signal(syscall.SIGTERM)
	code, ok := h.agg.wait(30 * time.Second)
	if !ok || code != 0 {
		h.fatalf("the aggregator did not exit 0 on SIGTERM (exit %d, in time %v)", code, ok)
	}
	h.agg.stdin.Close()
}

func (h *aggHistory) openStore() aggstore.Store {
	var st aggstore.Store
	var err error
	if h.pg != "" {
		st, err = pgstore.Open(context.Background(), h.pg, nil)
	} else {
		st, err = boltstore.Open(filepath.Join(h.root, ".aggregate", "aggregate.db"), nil)
	}
	if err != nil {
		h.fatalf("open the aggregator's store: %v", err)
	}
	return st
}

// ready waits until the aggregator took its lease on the Source id (""
// any): it has read the sources file then, and handles SIGHUP and
// SIGTERM (before, they end it, as they end any daemon that starts).
//
// With two nodes the node acted on has taken some lease (it has read
// the file and handles signals), and one of them that on id.
func (h *aggHistory) ready(id string) {
	h.waitEvent(0, func(e aggregate.Event) bool {
		return e.Kind == aggregate.EventLease && strings.HasPrefix(e.Message, "taken by") && (id == "" || h.other != nil || e.Source == id)
	}, "lease taken on "+id)
	if h.other == nil || id == "" {
		return
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, p := range []*proc{h.agg, h.other} {
			for _, e := range events(p.out.String()) {
				if e.Kind == aggregate.EventLease && strings.HasPrefix(e.Message, "taken by") && e.Source == id {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			h.fatalf("no node took the lease on %s", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitEvent waits for an event of the aggregator's output after mark.
func (h *aggHistory) waitEvent(mark int, match func(aggregate.Event) bool, what string) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, e := range events(h.agg.out.String()[mark:]) {
			if match(e) {
				return
			}
		}
		if h.agg.exited() || time.Now().After(deadline) {
			h.fatalf("no %s (exit %v)", what, h.agg.exited())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// events parses the JSON lines of an output; a line cut by a kill and
// what is not JSON (stderr) are skipped.
func events(out string) []aggregate.Event {
	var es []aggregate.Event
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var e aggregate.Event
		if json.Unmarshal(line, &e) == nil {
			es = append(es, e)
		}
	}
	return es
}

// --- the checks ---

// settle waits until every mirror is what the model says: a listed
// Source's equals its directory, a removed one's is frozen.
func (h *aggHistory) settle(what string) {
	h.logf("  %s: wait for every mirror", what)
	h.stats["settles"]++
	for _, s := range h.srcs {
		h.settleOne(s, what)
	}
}

func (h *aggHistory) settleOne(s *aggSource, what string) {
	h.t.Helper()
	mirror := filepath.Join(h.root, s.dest)
	if s.sdshare {
		h.sdSettle(s, what)
		return
	}
	if !s.listed {
		if s.frozen == nil {
			h.fatalf("%s: %s removed but never frozen", what, s.dest)
		}
		// Nothing may change it: look now and again a moment later.
		for range 2 {
			if got := treeOf(mirror); !equalTrees(got, s.frozen) {
				h.fatalf("%s: the mirror of the removed line %s changed: %s", what, s.dest, diffTrees(got, s.frozen))
			}
			time.Sleep(50 * time.Millisecond)
		}
		return
	}
	start := time.Now()
	for {
		want := treeOf(s.dir)
		got := treeOf(mirror)
		if equalTrees(got, want) {
			return
		}
		if h.agg.exited() {
			h.fatalf("%s: the aggregator exited (%d)", what, h.agg.code)
		}
		if h.other != nil && h.other.exited() {
			h.fatalf("%s: node %s exited (%d):\n%s", what, h.otherNode, h.other.code, h.other.tail())
		}
		if time.Since(start) > 5*time.Second {
			h.orphans(what, s, got, want)
		}
		if time.Since(start) > 40*time.Second {
			h.fatalf("%s: the mirror %s does not equal its Source after 40 s: %s\nserve:\n%s", what, s.dest, diffTrees(got, want), s.serve.tail())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// orphans fails the history when every difference of s's mirror is a
// file the aggregator reported kept that the Source no longer has: a
// file a run killed after it installed it and before it recorded it,
// taken for a user's and kept when the Source deleted it (the "orphan"
// bug, fixed by the Destination's intents). Otherwise it returns, and
// the caller waits on.
func (h *aggHistory) orphans(what string, s *aggSource, got, want map[string][]byte) {
	kept := map[string]bool{}
	for _, e := range events(h.agg.out.String()) {
		if e.Source == s.dest && e.Kind == destination.EventKept {
			kept[e.Path] = true
		}
	}
	var extra []string
	for p, b := range got {
		if w, ok := want[p]; ok {
			if !bytes.Equal(w, b) {
				return
			}
			continue
		}
		if !kept[p] {
			return
		}
		extra = append(extra, p)
	}
	for p := range want {
		if _, ok := got[p]; !ok {
			return
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		h.fatalf("%s: orphan: %s: %v deleted at the Source, kept in the mirror after a kill -9", what, s.dest, extra)
	}
}

// checkStore reads the run history (the aggregator stopped) and holds it
// against the events every incarnation printed.
func (h *aggHistory) checkStore() {
	seen := map[int64]*aggRun{}
	okEvents := 0
	for i, p := range h.procs {
		inc := i + 1
		for _, e := range events(p.out.String()) {
			if e.Run == nil || (e.Kind != aggregate.EventRunStart && e.Kind != aggregate.EventRunEnd) {
				continue
			}
			r := seen[e.Run.ID]
			if r == nil {
				r = &aggRun{inc: inc, source: e.Source}
				seen[e.Run.ID] = r
			}
			if r.inc != inc {
				h.fatalf("run %d is in the output of incarnations %d and %d", e.Run.ID, r.inc, inc)
			}
			switch e.Kind {
			case aggregate.EventRunStart:
				if r.started {
					h.fatalf("run %d started twice", e.Run.ID)
				}
				r.started = true
			case aggregate.EventRunEnd:
				if r.ended != "" {
					h.fatalf("run %d ended twice (%s, then %s)", e.Run.ID, r.ended, e.Status)
				}
				if !r.started {
					h.fatalf("run %d ended (%s) without a run-start", e.Run.ID, e.Status)
				}
				r.ended = e.Status
				if e.Status == aggstore.StateOK {
					okEvents++
				}
			}
		}
	}

	st := h.openStore()
	defer st.Close()
	ids := map[int64]aggstore.Run{}
	okStore, lateOK := 0, 0
	states := map[string]int{}
	for _, s := range h.srcs {
		runs, err := st.Runs(context.Background(), s.dest, 0)
		if err != nil {
			h.fatalf("runs of %s: %v", s.dest, err)
		}
		for _, r := range runs {
			if o, dup := ids[r.ID]; dup {
				h.fatalf("run ID %d twice in the store: %+v and %+v", r.ID, o, r)
			}
			ids[r.ID] = r
			states[r.State]++
			if r.Source != s.dest {
				h.fatalf("run %d of %s listed under %s", r.ID, r.Source, s.dest)
			}
			switch r.State {
			case aggstore.StateOK, aggstore.StateFailed, aggstore.StateInterrupted:
			default:
				h.fatalf("run %d of %s is %q after the aggregator stopped (not one final state)", r.ID, r.Source, r.State)
			}
			if r.State == aggstore.StateFailed {
				// Not an invariant (a run cut by a changed line fails),
				// but worth seeing.
				h.stats["failed: "+r.Reason]++
				if strings.Contains(r.Error, "lost the Source's lease") && h.pg == "" {
					// One node: no other takes a lease.
					h.fatalf("run %d of %s failed with %q, and no other node ran", r.ID, r.Source, r.Error)
				}
				h.logf("  run %d of %s failed: %s: %s", r.ID, r.Source, r.Reason, r.Error)
			}
			if r.End.IsZero() {
				h.fatalf("run %d of %s is %s without an end", r.ID, r.Source, r.State)
			}
			inc, cut := h.runningAtKill[r.ID].inc, h.runningAtKill[r.ID].inc > 0
			if cut && r.State != aggstore.StateInterrupted {
				h.fatalf("run %d of %s was running when incarnation %d was killed, and is %s (not interrupted)", r.ID, r.Source, inc, r.State)
			}
			ev := seen[r.ID]
			if ev == nil || !ev.started {
				// StartRun committed, the process died before printing.
				if !cut {
					h.fatalf("run %d of %s (%s) is in the store without a run-start event, and was not cut by a kill: %+v", r.ID, r.Source, r.State, r)
				}
				continue
			}
			switch {
			case ev.ended != "" && ev.ended != r.State:
				h.fatalf("run %d of %s ended %s on --json, and is %s in the store", r.ID, r.Source, ev.ended, r.State)
			case ev.ended == "" && r.State == aggstore.StateOK:
				// Committed ok, killed before the event was printed:
				// only the last instant of a killed incarnation.
				if !h.killed[ev.inc-1] {
					h.fatalf("run %d of %s is ok in the store, but incarnation %d (stopped by SIGTERM) printed no run-end for it", r.ID, r.Source, ev.inc)
				}
				lateOK++
				h.logf("  run %d of %s: ok committed just before the kill of incarnation %d, its run-end not printed", r.ID, r.Source, ev.inc)
			}
			if r.State == aggstore.StateOK {
				okStore++
			}
		}
	}
	// The store keeps the newest 1000 runs of a Source (KeepRuns): a
	// run may be gone only when its Source has that many newer ones.
	oldest, count := map[string]int64{}, map[string]int{}
	for id, r := range ids {
		if o, ok := oldest[r.Source]; !ok || id < o {
			oldest[r.Source] = id
		}
		count[r.Source]++
	}
	pruned := func(id int64, source string) bool {
		return count[source] >= 1000 && id < oldest[source]
	}
	for id, r := range seen {
		if _, ok := ids[id]; !ok {
			if !pruned(id, r.source) {
				h.fatalf("run %d of %s was printed (incarnation %d) but is not in the store", id, r.source, r.inc)
			}
			if r.ended == aggstore.StateOK {
				okEvents--
			}
		}
	}
	for id, r := range h.runningAtKill {
		if _, ok := ids[id]; !ok && !pruned(id, r.source) {
			h.fatalf("run %d of %s, running at a kill, is gone from the store", id, r.source)
		}
	}
	if okStore != okEvents+lateOK {
		h.fatalf("%d ok runs in the store, %d run-end events with status ok (+%d committed at a kill)", okStore, okEvents, lateOK)
	}
	h.stats["runs"] = len(ids)
	h.stats["runs ok"] = okStore
	h.stats["runs interrupted"] = states[aggstore.StateInterrupted]
	h.stats["runs failed"] = states[aggstore.StateFailed]
	h.stats["runs cut by a kill"] = len(h.runningAtKill)
	h.stats["ok committed at a kill"] = lateOK
	h.logf("run history: %d runs, %v; %d cut by kill -9", len(ids), states, len(h.runningAtKill))
}

// treeOf reads a directory's files as path -> bytes, without the
// destination's state directory.
func treeOf(dir string) map[string][]byte {
	m := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == destination.StateDirName {
				return filepath.SkipDir
			}
			return nil
		}
		if b, err := os.ReadFile(p); err == nil {
			m[rel] = b
		}
		return nil
	})
	return m
}

func aggPaths(m map[string][]byte) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
