package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/graphstoretest"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
)

// A generated collection: a snapshot of resources and a history of
// changes (new values, deletions, re-creations, blank-node trees), served
// as a paged fragments feed (oldest first, the way our server pages).
type history struct {
	snapshot string
	changes  []change
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
			entries = append(entries, entryDoc(fmt.Sprint(i), c.updated.Format(time.RFC3339Nano), []string{c.resource}, relFragment, nt, fmt.Sprintf("/change/%d", i)))
		}
		w.Header().Set("Content-Type", "application/atom+xml")
		w.Write([]byte(feedDoc(next, entries...)))
	})
	fs.handle("/change/", func(w http.ResponseWriter, r *http.Request) {
		var i int
		fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/change/"), &i)
		time.Sleep(delay)
		w.Header().Set("Content-Type", nt)
		w.Write([]byte(h.changes[i].doc))
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

func syncDir(t *testing.T, dir, url string) error {
	store, err := boltstore.OpenDir(dir, nil)
	if err != nil {
		return err
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

// TestKillMidApply kills (SIGKILL) a client process at random moments
// while it loads the snapshot and applies pages of fragments into the
// embedded store, then lets a last run finish: the store must hold
// exactly the server's graph, and t the newest change.
func TestKillMidApply(t *testing.T) {
	resources, changes, kills := 200, 600, 6
	if testing.Short() {
		resources, changes, kills = 60, 150, 3
	}
	h := newHistory(3, resources, changes)
	fs := h.serve(t, 10, 200*time.Microsecond)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 5))
	last, midway := h.changes[len(h.changes)-1].updated, 0
	for k := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SDSHARE_CRASH_DIR="+dir, "SDSHARE_CRASH_URL="+fs.URL()+"/")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(100+rng.IntN(500)) * time.Millisecond
		if k == 0 {
			delay = time.Duration(20+rng.IntN(60)) * time.Millisecond // likely during the start or the snapshot
		}
		time.Sleep(delay)
		cmd.Process.Kill()
		err := cmd.Wait()
		st, err2 := OpenState(dir)
		if err2 != nil {
			t.Fatal(err2)
		}
		cs, _, _ := st.Get(fs.URL() + "/c")
		st.Close()
		if cs.T.After(mustTime(t, snapAt)) && cs.T.Before(last) {
			midway++
		}
		t.Logf("kill %d (%v): t = %v", k+1, err, cs.T)
	}
	if midway == 0 {
		t.Error("no kill landed between the snapshot and the last page")
	}
	if err := syncDir(t, dir, fs.URL()+"/"); err != nil {
		t.Fatal(err)
	}
	store, err := boltstore.OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Check(context.Background()); err != nil {
		t.Errorf("store check: %v", err)
	}
	got, want := graphOf(t, store, fs.URL()+"/c"), h.expected(t)
	if !graphstoretest.Isomorphic(got, want) {
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
	t.Logf("%d triples, %d changes, %d kills", len(got), len(h.changes), kills)
}
