package client

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/bulk"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/graphstoretest"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/sparql"
	"github.com/resourcesync-go/resourcesync/sdshare/internal/fragbulk"
)

// A generated collection: a snapshot of resources and a history of
// changes (new values, deletions, re-creations, blank-node trees), served
// as a paged fragments feed (oldest first, the way our server pages).
type history struct {
	snapshot string
	changes  []change

	snaps, served atomic.Int64 // snapshot and fragment requests answered
	maxServed     atomic.Int64 // 1 + the highest change index whose fragment was served

	// bulk offers the bulk fragment request (fragbulk) as our server
	// does; bulkReqs counts those answered.
	bulk     bool
	bulkReqs atomic.Int64
}

type change struct {
	resource string
	updated  time.Time
	doc      string // the fragment; "" deleted
}

func resourceDoc(rng *rand.Rand, i, v int) string {
	if v > 0 && rng.IntN(8) == 0 {
		return ""
	}
	r := fmt.Sprintf("<http://x/r%d>", i)
	var b strings.Builder
	fmt.Fprintf(&b, "%s <http://x/v> \"%d\" .\n", r, v)
	if rng.IntN(2) == 0 {
		fmt.Fprintf(&b, "%s <http://x/link> <http://x/r%d> .\n", r, rng.IntN(50))
	}
	for k := range rng.IntN(3) {
		fmt.Fprintf(&b, "%s <http://x/note> _:n%d .\n_:n%d <http://x/text> \"%d-%d\" .\n_:n%d <http://x/sub> _:s%d .\n_:s%d <http://x/deep> \"x\" .\n", r, k, k, v, k, k, k, k)
	}
	return b.String()
}

func newHistory(seed uint64, resources, changes int) *history {
	rng := rand.New(rand.NewPCG(seed, 1))
	h := &history{}
	var snap strings.Builder
	for i := range resources {
		// Labels are document-scoped: prefix them per resource in the
		// one snapshot document.
		snap.WriteString(strings.ReplaceAll(resourceDoc(rng, i, 0), "_:", fmt.Sprintf("_:r%d", i)))
	}
	h.snapshot = snap.String()
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for c := range changes {
		// Equal timestamps now and then, across page boundaries too.
		if rng.IntN(4) != 0 {
			t = t.Add(time.Millisecond)
		}
		i := rng.IntN(resources + resources/10) // some resources are new
		h.changes = append(h.changes, change{fmt.Sprintf("http://x/r%d", i), t, resourceDoc(rng, i, c+1)})
	}
	return h
}

const snapAt = "2025-12-31T00:00:00Z"

// serve serves h with pages of pageSize entries. A fragment's URL names
// the change, so the fragment fetched is the one the entry announces (a
// real server serves the current state; both converge).
func (h *history) serve(t *testing.T, pageSize int, delay time.Duration) *fixtureServer {
	fs := collectionServer(t, snapAt, h.snapshot)
	snap := fs.routes["/snap"]
	fs.handle("/snap", func(w http.ResponseWriter, r *http.Request) {
		h.snaps.Add(1)
		snap(w, r)
	})
	fs.handle("/fragments", func(w http.ResponseWriter, r *http.Request) {
		since := time.Time{}
		if s := r.URL.Query().Get("since"); s != "" {
			var err error
			if since, err = time.Parse(time.RFC3339Nano, s); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
		}
		start := 0
		fmt.Sscan(r.URL.Query().Get("from"), &start)
		var entries []string
		next := ""
		for i := start; i < len(h.changes); i++ {
			c := h.changes[i]
			if c.updated.Before(since) {
				continue
			}
			if len(entries) == pageSize {
				next = fmt.Sprintf("/fragments?from=%d&amp;since=%s", i, r.URL.Query().Get("since"))
				break
			}
			link := fmt.Sprintf("/change/%d", i)
			if h.bulk {
				link = fmt.Sprintf("/fragment?change=%d", i)
			}
			entries = append(entries, entryDoc(fmt.Sprint(i), c.updated.Format(time.RFC3339Nano), []string{c.resource}, relFragment, nt, link))
		}
		if h.bulk {
			w.Header().Set("Link", "</bulk>; rel=\""+fragbulk.Rel+"\"")
		}
		w.Header().Set("Content-Type", "application/atom+xml")
		w.Write([]byte(feedDoc(next, entries...)))
	})
	servedOne := func(i int) {
		h.served.Add(1)
		for m := h.maxServed.Load(); int64(i+1) > m && !h.maxServed.CompareAndSwap(m, int64(i+1)); m = h.maxServed.Load() {
		}
	}
	fs.handle("/change/", func(w http.ResponseWriter, r *http.Request) {
		var i int
		fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/change/"), &i)
		time.Sleep(delay)
		w.Header().Set("Content-Type", nt)
		w.Write([]byte(h.changes[i].doc))
		servedOne(i)
	})
	fs.handle("/fragment", func(w http.ResponseWriter, r *http.Request) {
		var i int
		fmt.Sscan(r.URL.Query().Get("change"), &i)
		time.Sleep(delay)
		w.Header().Set("Content-Type", nt)
		w.Write([]byte(h.changes[i].doc))
		servedOne(i)
	})
	fs.handle("/bulk", func(w http.ResponseWriter, r *http.Request) {
		paths, err := bulk.ParseRequest(r.Body)
		if err != nil || r.Method != http.MethodPost {
			http.Error(w, "bad bulk request", http.StatusBadRequest)
			return
		}
		h.bulkReqs.Add(1)
		w.Header().Set("Content-Type", bulk.MediaType)
		for _, p := range paths {
			var i int
			fmt.Sscanf(p, "fragment?change=%d", &i)
			time.Sleep(delay)
			doc := h.changes[i].doc
			w.Write(bulk.AppendHeader(nil, 200, len(doc), p))
			io.WriteString(w, doc)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			servedOne(i)
		}
		io.WriteString(w, bulk.End)
	})
	return fs
}

// expected applies the snapshot and every change, in order, to a memstore.
func (h *history) expected(t *testing.T) []rdf.Triple {
	s := memstore.New()
	defer s.Close()
	ctx := context.Background()
	if err := s.ReplaceGraph(ctx, "http://x/g", rdf.Parse(strings.NewReader(h.snapshot), rdf.NTriples, "")); err != nil {
		t.Fatal(err)
	}
	for _, c := range h.changes {
		if err := s.ApplyFragment(ctx, "http://x/g", rdf.IRI(c.resource), graphstoretest.NT(c.doc)); err != nil {
			t.Fatal(err)
		}
	}
	return graphOf(t, s, "http://x/g")
}

// TestCrashChild is the child process of TestKillMidApply; it does
// nothing unless started by it.
func TestCrashChild(t *testing.T) {
	dir, url := os.Getenv("SDSHARE_CRASH_DIR"), os.Getenv("SDSHARE_CRASH_URL")
	if dir == "" {
		t.Skip("child process of TestKillMidApply only")
	}
	if err := syncDir(t, dir, url); err != nil {
		t.Fatal(err)
	}
}

// syncDir syncs url into the embedded store in dir, or into the SPARQL
// endpoints named by SDSHARE_CRASH_SPARQL (update, query and graph store
// URLs separated by spaces), with its state in dir.
func syncDir(t *testing.T, dir, url string) error {
	var store graphstore.Store
	if ep := strings.Fields(os.Getenv("SDSHARE_CRASH_SPARQL")); len(ep) == 3 {
		hc, _ := testnet.Client(t)
		store = sparql.New(sparql.Endpoints{Update: ep[0], Query: ep[1], GraphStore: ep[2]}, hc)
	} else {
		s, err := boltstore.OpenDir(dir, nil)
		if err != nil {
			return err
		}
		store = s
	}
	defer store.Close()
	state, err := OpenState(dir)
	if err != nil {
		return err
	}
	defer state.Close()
	hc, _ := testnet.Client(t)
	rep, err := Sync(context.Background(), Config{Overview: url, Store: store, State: state, HTTPClient: hc})
	if err != nil {
		return err
	}
	if !rep.OK() {
		c := rep.Collections[0]
		return fmt.Errorf("%d failures (first: %+v), error %q", len(c.Failures), c.Failures[:min(1, len(c.Failures))], c.Err)
	}
	return nil
}

// startChild starts the test binary as a TestCrashChild process syncing
// url into dir.
func startChild(t *testing.T, dir, url string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SDSHARE_CRASH_DIR="+dir, "SDSHARE_CRASH_URL="+url)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// killWhen kills cmd (SIGKILL) as soon as now() is true, unless it exits
// first, and returns how it ended.
func killWhen(cmd *exec.Cmd, now func() bool) error {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		select {
		case err := <-exited:
			return err
		case <-time.After(time.Millisecond):
		}
		if now() {
			cmd.Process.Kill()
			return <-exited
		}
	}
}

// TestKillMidApply kills (SIGKILL) a client process at random moments
// while it loads the snapshot and applies pages of fragments into the
// embedded store, then lets a last run finish: the store must hold
// exactly the server's graph, and t the newest change.
func TestKillMidApply(t *testing.T) {
	killMidApply(t, "", 200, 600, 6)
}

// TestKillMidBulk kills the client while it reads bulk fragment
// responses (fragbulk; pages of 50, one request each) and applies them:
// after each kill t is not ahead of the store, and the last run ends
// with the server's graph.
func TestKillMidBulk(t *testing.T) {
	reqs := killTest(t, "", 150, 1500, 6, 50, 0, true)
	if reqs == 0 {
		t.Error("no bulk request was made")
	}
}

// TestKillMidBatch kills the client while it applies pages of 50
// fragments, each page one batch (one transaction) of the embedded
// store, served without delay so that kills land in the batch writes
// too. After each kill t is not ahead of the store (checkNotAhead), and
// the last run ends with the server's graph.
func TestKillMidBatch(t *testing.T) {
	killTest(t, "", 150, 1500, 6, 50, 0, false)
}

// TestKillMidPipeline kills the client while it fetches the fragments
// of later pages ahead of the page it applies (pages of 10): some kill
// must find a fragment served from a page past the one t stands in, and
// after every kill t is not ahead of the store.
func TestKillMidPipeline(t *testing.T) {
	if ahead := killTest(t, "", 150, 1500, 6, 10, 0, false); ahead == 0 {
		t.Error("no kill found fragments fetched from a later page than the one being applied")
	}
}

// killMidApply runs the kill test into the embedded store, or into the
// SPARQL endpoints sparqlEnv names (see syncDir).
func killMidApply(t *testing.T, sparqlEnv string, resources, changes, kills int) {
	killTest(t, sparqlEnv, resources, changes, kills, 10, 200*time.Microsecond, false)
}

// killTest serves a history in pages of pageSize, each fragment after
// delay (with bulk, in bulk requests too), and kills the client kills
// times. ahead counts the kills that found a fragment served a page or
// more past the first change t does not cover: fetched across pages,
// ahead of the store; with bulk, it returns the bulk requests answered.
func killTest(t *testing.T, sparqlEnv string, resources, changes, kills, pageSize int, delay time.Duration, withBulk bool) (ahead int) {
	if testing.Short() {
		resources, changes, kills = resources/3, changes/4, kills/2
	}
	t.Setenv("SDSHARE_CRASH_SPARQL", sparqlEnv)
	h := newHistory(3, resources, changes)
	h.bulk = withBulk
	fs := h.serve(t, pageSize, delay)
	if withBulk {
		defer func() { ahead = int(h.bulkReqs.Load()) }()
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 5))
	last, midway := h.changes[len(h.changes)-1].updated, 0
	for k := range kills {
		cmd := startChild(t, dir, fs.URL()+"/")
		// Kill when the server has answered the snapshot request (first
		// kill) or 1.5 to 6 pages more fragment requests: the client is
		// then in the middle of loading or of applying a page, however
		// fast or slow the machine, and has finished at least one page.
		snaps, served, target := h.snaps.Load(), h.served.Load(), int64((15+rng.IntN(46))*pageSize/10)
		err := killWhen(cmd, func() bool {
			return (k == 0 && h.snaps.Load() > snaps) || (k > 0 && h.served.Load() >= served+target)
		})
		st, err2 := OpenState(dir)
		if err2 != nil {
			t.Fatal(err2)
		}
		cs, _, _ := st.Get(fs.URL() + "/c")
		st.Close()
		if sparqlEnv == "" {
			h.checkNotAhead(t, dir, fs.URL()+"/c", cs.T)
		}
		if cs.T.After(mustTime(t, snapAt)) && cs.T.Before(last) {
			midway++
			u := slices.IndexFunc(h.changes, func(c change) bool { return c.updated.After(cs.T) })
			if u >= 0 && h.maxServed.Load() > int64(u+pageSize) {
				ahead++
			}
		}
		t.Logf("kill %d (%v): t = %v", k+1, err, cs.T)
	}
	if midway == 0 {
		t.Error("no kill landed between the snapshot and the last page")
	}
	if err := syncDir(t, dir, fs.URL()+"/"); err != nil {
		t.Fatal(err)
	}
	var store graphstore.Store
	if sparqlEnv != "" {
		ep := strings.Fields(sparqlEnv)
		hc, _ := testnet.Client(t)
		store = sparql.New(sparql.Endpoints{Update: ep[0], Query: ep[1], GraphStore: ep[2]}, hc)
	} else {
		bs, err := boltstore.OpenDir(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := bs.Check(context.Background()); err != nil {
			t.Errorf("store check: %v", err)
		}
		store = bs
	}
	defer store.Close()
	got, want := graphOf(t, store, fs.URL()+"/c"), h.expected(t)
	if !rdf.Isomorphic(got, want) {
		t.Fatalf("graph after kills: %d triples, want %d", len(got), len(want))
	}
	state, err := OpenState(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer state.Close()
	if st, _, _ := state.Get(fs.URL() + "/c"); !st.T.Equal(h.changes[len(h.changes)-1].updated) {
		t.Errorf("t = %v, want %v", st.T, h.changes[len(h.changes)-1].updated)
	}
	t.Logf("%d triples, %d changes, %d kills (%d with fragments fetched a page ahead)", len(got), len(h.changes), kills, ahead)
	return ahead
}

// checkNotAhead checks, after a kill, that the client's t is not ahead of
// what the embedded store in dir durably holds: t promises every change
// dated before it (since is inclusive), so each resource must be at the
// last such change of it or at a later one (a rerun may apply a few
// again), never at an older version. The store must also pass Check.
func (h *history) checkNotAhead(t *testing.T, dir, graph string, tt time.Time) {
	t.Helper()
	s, err := boltstore.OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Check(ctx); err != nil {
		t.Fatalf("after kill: %v", err)
	}
	if tt.IsZero() {
		return // no snapshot recorded: nothing promised
	}
	// The last change before t of each resource; -1: none.
	last := map[string]int{}
	for i, c := range h.changes {
		if _, ok := last[c.resource]; !ok {
			last[c.resource] = -1
		}
		if c.updated.Before(tt) {
			last[c.resource] = i
		}
	}
	for r, l := range last {
		if l < 0 {
			continue
		}
		got, err := s.Fragment(ctx, graph, rdf.IRI(r))
		if err != nil {
			t.Fatal(err)
		}
		ok := false
		for _, c := range h.changes[l:] {
			if c.resource == r && rdf.Isomorphic(got, graphstoretest.NT(c.doc)) {
				ok = true
				break
			}
		}
		if !ok {
			t.Fatalf("t = %v, but resource %s is older than change %d (updated %v), which t says is applied:\n%v", tt, r, l, h.changes[l].updated, got)
		}
	}
}
