//go:build unix

package main

import (
	"context"
	"fmt"
	stdmaps "maps"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/sparqltest"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/sparql"
)

// The SDShare line of TestAggregateModelPG: an `sdshare serve` of one
// collection ("c", the file c.nt in the Source's directory), merged by
// whichever node holds the line into one SPARQL store (Virtuoso) that
// both nodes write. The model's "files" of such a Source are resources
// (<http://ex.test/rN> with one value); a change rewrites c.nt.

// addSDShare adds the SDShare Source (before the Sources start).
func (h *aggHistory) addSDShare(srv *sparqltest.Server) {
	h.sparql = srv
	dir := filepath.Dir(h.sources)
	s := &aggSource{dest: "graphs/g0", dir: filepath.Join(dir, "sdsrc"), state: filepath.Join(dir, "sdstate"),
		listed: true, sdshare: true, triples: map[string]string{}, poll: []string{"300ms", "700ms"}[h.rng.IntN(2)]}
	for _, d := range []string{s.dir, s.state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			h.t.Fatal(err)
		}
	}
	h.srcs = append(h.srcs, s)
}

func (h *aggHistory) sdWrite(s *aggSource) {
	var b strings.Builder
	for _, id := range slicesSorted(s.triples) {
		fmt.Fprintf(&b, "<http://ex.test/%s> <http://ex.test/v> %q .\n", id, s.triples[id])
	}
	h.write(s, "c.nt", []byte(b.String()))
}

func slicesSorted(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// sdCreate adds a resource to the collection.
func (h *aggHistory) sdCreate(s *aggSource) string {
	h.counter++
	id := fmt.Sprintf("r%03d", h.counter)
	s.triples[id] = fmt.Sprint("value ", h.counter)
	h.sdWrite(s)
	return id
}

// sdChange creates, updates or deletes 1-3 resources.
func (h *aggHistory) sdChange(s *aggSource) {
	var did []string
	for range 1 + h.rng.IntN(3) {
		ids := slicesSorted(s.triples)
		switch r := h.rng.IntN(10); {
		case r < 4 || len(ids) == 0:
			did = append(did, "create "+h.sdCreate(s))
		case r < 8:
			id := ids[h.rng.IntN(len(ids))]
			h.counter++
			s.triples[id] = fmt.Sprint("value ", h.counter)
			h.sdWrite(s)
			did = append(did, "update "+id)
		default:
			if len(ids) < 2 {
				continue
			}
			id := ids[h.rng.IntN(len(ids))]
			delete(s.triples, id)
			h.sdWrite(s)
			did = append(did, "delete "+id)
		}
	}
	h.logf("  %s (sdshare): %s", s.dest, strings.Join(did, ", "))
	h.stats["changes"]++
}

func (h *aggHistory) sdServe(s *aggSource) {
	addr := freeAddr(h.t)
	s.base = "http://" + addr + "/"
	s.serve = startProc(h.t, "sdshare", "serve", "--addr", addr, "--state", s.state, "--rescan", "200ms",
		"--debounce", "50ms", "c="+filepath.Join(s.dir, "c.nt"))
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(s.serve.out.String(), "serving SDShare at") {
		if s.serve.exited() || time.Now().After(deadline) {
			h.fatalf("sdshare serve %s did not start (exit %d):\n%s", s.dir, s.serve.code, s.serve.tail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sdGraph reads the collection's graph from the SPARQL store: id ->
// value.
func (h *aggHistory) sdGraph(s *aggSource) (map[string]string, error) {
	st := sparql.New(sparql.Endpoints{Update: h.sparql.UpdateURL, Query: h.sparql.QueryURL, GraphStore: h.sparql.GraphStoreURL},
		&http.Client{Timeout: 30 * time.Second})
	defer st.Close()
	got := map[string]string{}
	for tr, err := range st.Triples(context.Background(), s.base+"c/") {
		if err != nil {
			return nil, err
		}
		got[strings.TrimPrefix(tr.S.Value, "http://ex.test/")] = tr.O.Value
	}
	return got, nil
}

// sdSettle waits until the graph equals the collection.
func (h *aggHistory) sdSettle(s *aggSource, what string) {
	start := time.Now()
	for {
		got, err := h.sdGraph(s)
		if err == nil && stdmaps.Equal(got, s.triples) {
			return
		}
		if h.agg.exited() {
			h.fatalf("%s: the aggregator exited (%d)", what, h.agg.code)
		}
		if time.Since(start) > 40*time.Second {
			h.fatalf("%s: the graph of %s does not equal its collection after 40 s: %v (%v), want %v\nserve:\n%s", what, s.dest, got, err, s.triples, s.serve.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
