package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
)

// TestEndlessSnapshotLeavesNoGrowth: an endless snapshot is refused at
// MaxSnapshotBytes, and the embedded store's file is left as it was: on
// main the refused snapshot's triples were loaded into graph.db before
// the cap was reached, and the file kept the space (100 MiB cap: 801 MB).
// The graph keeps its content, nothing is left in the store's directory,
// and a later good snapshot applies.
func TestEndlessSnapshotLeavesNoGrowth(t *testing.T) {
	const limit = 2 << 20
	fs := collectionServer(t, "2020-06-01T00:00:00Z", "")
	var endless atomic.Bool
	endless.Store(true)
	fs.handle("/snap", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", nt)
		if !endless.Load() {
			fmt.Fprint(w, "<http://x/good> <http://x/p> \"new\" .\n")
			return
		}
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "<http://x/r%d> <http://x/p%d> \"a distinct literal, number %d\" .\n", i, i%100, i); err != nil {
				return
			}
		}
	})
	dir := t.TempDir()
	store, err := boltstore.OpenDir(dir, &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := newEnv(t)
	e.store = store
	graph := fs.URL() + "/c"
	old := []rdf.Triple{{S: rdf.IRI("http://x/old"), P: rdf.IRI("http://x/p"), O: rdf.Literal("kept")}}
	if err := store.ReplaceGraph(context.Background(), graph, func(yield func(rdf.Triple, error) bool) {
		for _, t := range old {
			yield(t, nil)
		}
	}); err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		fi, err := os.Stat(boltstore.PathIn(dir))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()

	cfg := e.config(fs.URL() + "/")
	cfg.MaxSnapshotBytes = limit
	rep, err := Sync(context.Background(), cfg)
	var msg string
	if err != nil {
		msg = err.Error()
	}
	for _, c := range rep.Collections {
		msg += c.Err
	}
	if !errors.Is(err, ErrTooLarge) && !strings.Contains(msg, "snapshot longer than") {
		t.Fatalf("endless snapshot: %v (%s); want it refused as too large", err, msg)
	}
	after := size()
	t.Logf("graph.db: %d bytes before, %d after the refused snapshot (cap %d)", before, after, limit)
	if slack := int64(256 << 10); after > before+slack {
		t.Errorf("graph.db grew from %d to %d bytes with a refused snapshot (cap %d)", before, after, limit)
	}
	if got := graphOf(t, store, graph); len(got) != 1 || got[0] != old[0] {
		t.Errorf("graph after the refusal: %v, want the old content", got)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != boltstore.FileName {
			t.Errorf("left in the store's directory: %s", filepath.Join(dir, e.Name()))
		}
	}

	// A good snapshot then applies (a fresh client state takes it again).
	endless.Store(false)
	e2 := newEnv(t)
	cfg.State = e2.state
	if _, err := Sync(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if got := graphOf(t, store, graph); len(got) != 1 || got[0].S.Value != "http://x/good" {
		t.Errorf("graph after a good snapshot: %v", got)
	}
}
