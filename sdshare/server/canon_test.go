package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/rdf"
)

const cycleRes = "http://ex/cycles"

// cycleDoc is resource cycleRes reaching n blank cycles of length m
// (labels prefix+"k_i"), plus ground resource a with value av.
func cycleDoc(prefix string, n, m int, av string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<http://ex/a> <http://ex/v> %q .\n", av)
	for k := range n {
		fmt.Fprintf(&b, "<%s> <http://ex/has> _:%s%d_0 .\n", cycleRes, prefix, k)
		for i := range m {
			fmt.Fprintf(&b, "_:%s%d_%d <http://ex/next> _:%s%d_%d .\n", prefix, k, i, prefix, k, (i+1)%m)
		}
	}
	return b.String()
}

// fragmentOK GETs iri's fragment and checks that the bytes are what the
// inventory's hash and size describe.
func fragmentOK(e *env, iri string) []byte {
	e.t.Helper()
	resp, body := e.get(fragmentURL(e, iri))
	if resp.StatusCode != 200 {
		e.t.Fatalf("GET fragment %s: %s", iri, resp.Status)
	}
	rec, err := e.coll().Store().Get(context.Background(), iri)
	if err != nil {
		e.t.Fatal(err)
	}
	if rec.SHA256 != sha256.Sum256(body) || rec.Size != int64(len(body)) {
		e.t.Errorf("fragment %s: %d bytes do not match the inventory's hash and size %d", iri, len(body), rec.Size)
	}
	return body
}

// fragmentBody GETs iri's fragment (while waiting for a reload, when the
// inventory may already be newer than the version a GET saw).
func fragmentBody(e *env, iri string) []byte {
	e.t.Helper()
	_, body := e.get(fragmentURL(e, iri))
	return body
}

// TestFragmentCanonicalOnce: a fragment of many blank nodes in cycles is
// labelled canonically once per change, not per GET (issue 24 item 12:
// seconds per GET at 128k blank nodes); the bytes are the same on every
// GET and after a restart; a change elsewhere in the file reuses them, a
// relabelled rewrite recomputes the same bytes, a change of the fragment
// new ones.
func TestFragmentCanonicalOnce(t *testing.T) {
	e := newEnv(t, map[string]string{"d.nt": cycleDoc("c", 500, 4, "1")}, nil)
	c := e.coll()
	if n := c.canonRuns.Load(); n != 1 {
		t.Fatalf("%d canonicalisations at load, want 1 (the one fragment with blank nodes)", n)
	}
	first := fragmentOK(e, cycleRes)
	if !bytes.Contains(first, []byte("_:c0 ")) {
		t.Fatalf("fragment not in canonical labels:\n%.300s", first)
	}
	for range 5 {
		if b := fragmentOK(e, cycleRes); !bytes.Equal(b, first) {
			t.Fatal("the bytes of a fragment differ between GETs")
		}
	}
	_, ttl := e.get(fragmentURL(e, cycleRes) + "&format=ttl")
	var tts []rdf.Triple
	for tr, err := range rdf.Parse(bytes.NewReader(ttl), rdf.Turtle, "") {
		if err != nil {
			t.Fatalf("Turtle fragment: %v", err)
		}
		tts = append(tts, tr)
	}
	if d := rdf.IsomorphicDiff(tts, parseNT(t, first)); d != "" {
		t.Errorf("the Turtle fragment is not the N-Triples one: %s", d)
	}
	if n := c.canonRuns.Load(); n != 1 {
		t.Errorf("%d canonicalisations after 7 GETs, want still 1", n)
	}
	if _, m := e.get(e.base + "metrics"); !strings.Contains(string(m), `sdshare_server_canonicalisations_total{collection="c"} 1`) {
		t.Errorf("metrics do not count one canonicalisation:\n%s", m)
	}

	e.restart()
	c = e.coll()
	if b := fragmentOK(e, cycleRes); !bytes.Equal(b, first) {
		t.Error("the bytes of a fragment differ after a restart")
	}

	// A change of another resource: the fragment is not labelled again.
	e.write("d.nt", cycleDoc("c", 500, 4, "2"))
	waitFor(t, "a's change", func() bool { return strings.Contains(string(fragmentBody(e, "http://ex/a")), `"2"`) })
	if n := c.canonRuns.Load(); n != 1 {
		t.Errorf("%d canonicalisations after a change of another resource, want 1", n)
	}
	seq := c.version().seq
	// Other labels, same graph: labelled again, same bytes, no change.
	e.write("d.nt", cycleDoc("z", 500, 4, "2"))
	waitFor(t, "the relabelled file loaded", func() bool { return c.canonRuns.Load() == 2 })
	if b := fragmentOK(e, cycleRes); !bytes.Equal(b, first) {
		t.Error("a relabelled rewrite changed the fragment's bytes")
	}
	if s := c.version().seq; s != seq {
		t.Errorf("a relabelled rewrite was journaled (seq %d, was %d)", s, seq)
	}
	// The fragment changes: new bytes.
	e.write("d.nt", cycleDoc("z", 501, 4, "2"))
	waitFor(t, "the changed fragment", func() bool { return !bytes.Equal(fragmentBody(e, cycleRes), first) })
	if n := c.canonRuns.Load(); n != 3 {
		t.Errorf("%d canonicalisations after a change of the fragment, want 3", n)
	}
}

func parseNT(t *testing.T, b []byte) []rdf.Triple {
	t.Helper()
	var out []rdf.Triple
	for tr, err := range rdf.Parse(bytes.NewReader(b), rdf.NTriples, "") {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tr)
	}
	return out
}

// TestFragmentBeyondCanonicalBudget: a fragment whose canonical labelling
// would take more steps than allowed is logged, counted on /healthz
// (degraded, a count, no details) and in the metrics, and served with its
// labels as loaded: the same bytes on every GET and after a restart,
// matching the inventory. The other fragments are served as usual.
func TestFragmentBeyondCanonicalBudget(t *testing.T) {
	doc := cycleDoc("c", 500, 4, "1")
	e := newEnv(t, map[string]string{"d.nt": doc}, func(c *Config) { c.CanonicalSteps = 1000 })
	c := e.coll()
	if n := c.canonOver.Load(); n != 1 {
		t.Fatalf("%d canonicalisations over budget, want 1", n)
	}
	var want []string
	for _, l := range strings.SplitAfter(doc, "\n") {
		if strings.HasPrefix(l, "<"+cycleRes+">") || strings.HasPrefix(l, "_:") {
			want = append(want, l)
		}
	}
	slices.Sort(want)
	body := fragmentOK(e, cycleRes)
	if string(body) != strings.Join(want, "") {
		t.Fatalf("over budget: fragment is not its loaded lines sorted:\n%.300s", body)
	}
	for range 3 {
		if b := fragmentOK(e, cycleRes); !bytes.Equal(b, body) {
			t.Fatal("the bytes of a fragment over budget differ between GETs")
		}
	}
	if b := fragmentOK(e, "http://ex/a"); string(b) != "<http://ex/a> <http://ex/v> \"1\" .\n" {
		t.Errorf("a's fragment: %q", b)
	}
	_, h := e.get(e.base + "healthz")
	if !strings.Contains(string(h), "degraded") || !strings.Contains(string(h), "1 fragments beyond the canonical labelling budget") || strings.Contains(string(h), cycleRes) {
		t.Errorf("healthz does not say degraded with a count (and nothing else): %s", h)
	}
	if _, m := e.get(e.base + "metrics"); !strings.Contains(string(m), `sdshare_server_fragments_over_budget{collection="c"} 1`) {
		t.Errorf("metrics do not count the fragment over budget")
	}
	if !strings.Contains(e.logs.String(), "beyond the canonical labelling budget") || !strings.Contains(e.logs.String(), cycleRes) {
		t.Errorf("the fragment over budget is not logged:\n%s", e.logs.String())
	}
	e.restart()
	c = e.coll()
	if b := fragmentOK(e, cycleRes); !bytes.Equal(b, body) {
		t.Error("the bytes of a fragment over budget differ after a restart")
	}
	// Within the budget again: canonical, healthy.
	e.write("d.nt", cycleDoc("c", 2, 4, "1"))
	waitFor(t, "the smaller fragment", func() bool { return bytes.Contains(fragmentBody(e, cycleRes), []byte("_:c0 ")) })
	if _, h := e.get(e.base + "healthz"); strings.Contains(string(h), "degraded") {
		t.Errorf("healthz still degraded: %s", h)
	}
}

// TestFragmentGETDoesNotWaitForCanonicalisation: while the loader is
// labelling a changed fragment, GETs of it (the last version) and of the
// other fragments are answered: no request does that work.
func TestFragmentGETDoesNotWaitForCanonicalisation(t *testing.T) {
	entered, release := make(chan string), make(chan struct{})
	e := newEnv(t, map[string]string{"d.nt": cycleDoc("c", 500, 4, "1")}, nil, func(s *Server) {
		s.beforeCanon = func(iri string) {
			select { // only the first labelling waits
			case entered <- iri:
				<-release
			case <-release:
			}
		}
	})
	old := fragmentOK(e, cycleRes)
	e.write("d.nt", cycleDoc("c", 501, 4, "2"))
	if iri := <-entered; iri != cycleRes {
		t.Fatalf("labelling %s", iri)
	}
	if b := fragmentOK(e, cycleRes); !bytes.Equal(b, old) {
		t.Error("during the reload, the fragment is not the last version's")
	}
	if b := fragmentOK(e, "http://ex/a"); !strings.Contains(string(b), `"1"`) {
		t.Errorf("a's fragment during the reload: %q", b)
	}
	if resp, _ := e.get(e.base + "healthz"); resp.StatusCode != 200 {
		t.Errorf("healthz during the reload: %s", resp.Status)
	}
	close(release)
	waitFor(t, "the new version", func() bool { return !bytes.Equal(fragmentBody(e, cycleRes), old) })
}

// TestFragmentGroundLinesCounted: a fragment of 3,000 ground statements
// and four interchangeable blank pairs costs the canonical search a few
// dozen labellings of all its lines (some 200 ms), though its blank nodes
// have few edges; it is labelled once at load and kept, not labelled
// again on every GET. Before, rdf.CanonicalBounded counted the edges only
// (about 3,600 steps, under keepSteps), and every GET redid the search.
func TestFragmentGroundLinesCounted(t *testing.T) {
	const r = "http://ex/many"
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "<%s> <http://ex/v> \"value %d\" .\n", r, i)
	}
	for i := range 4 {
		fmt.Fprintf(&b, "<%s> <http://ex/q> _:b%d .\n_:b%d <http://ex/p> _:c%d .\n_:c%d <http://ex/p> _:b%d .\n", r, i, i, i, i, i)
	}
	e := newEnv(t, map[string]string{"d.nt": b.String()}, nil)
	c := e.coll()
	if _, ok := c.version().kept[r]; !ok {
		t.Fatal("the fragment is not kept: every GET labels it again")
	}
	first := fragmentOK(e, r)
	if b := fragmentOK(e, r); !bytes.Equal(b, first) || !bytes.Contains(first, []byte("_:c0 ")) {
		t.Fatal("the kept fragment is not canonical or differs between GETs")
	}
}

// TestCanonicalLoadBudget: each fragment's budget does not bound a load:
// a file of many small fragments, each 25 blank 4-cycles the search
// labels in some 150,000 steps (about 0.2 s for 5 KB), cost that many
// times over at every start (a 10 MB file of them: some 7 minutes). A load also has
// a budget for all its fragments together, CanonicalSteps plus
// loadStepsPerTriple a triple; past it the remaining costly fragments
// are served with their labels as loaded, logged and counted, as a
// fragment past its own budget. Before, all 30 were labelled (0 over).
func TestCanonicalLoadBudget(t *testing.T) {
	const n = 30
	var b strings.Builder
	for k := range n {
		// Resource k reaching 25 blank 4-cycles: 125 triples.
		b.WriteString(strings.ReplaceAll(cycleDoc(fmt.Sprintf("k%d_", k), 25, 4, "1"), cycleRes, fmt.Sprintf("http://ex/r%d", k)))
	}
	e := newEnv(t, map[string]string{"d.nt": b.String()}, func(c *Config) { c.CanonicalSteps = 1 << 20 })
	v := e.coll().version()
	if v.overBudget < n/2 {
		t.Fatalf("%d fragments over budget, want at least %d of %d (the load's budget: %d steps and %d a triple)", v.overBudget, n/2, n, 1<<20, loadStepsPerTriple)
	}
	_, h := e.get(e.base + "healthz")
	if !strings.Contains(string(h), "degraded") || !strings.Contains(string(h), "fragments beyond the canonical labelling budget") {
		t.Errorf("healthz: %s", h)
	}
	if !strings.Contains(e.logs.String(), "beyond the canonical labelling budget") {
		t.Errorf("not logged:\n%s", e.logs.String())
	}
	// Served, and stable, all the same.
	for k := range n {
		r := fmt.Sprintf("http://ex/r%d", k)
		if a, b := fragmentOK(e, r), fragmentOK(e, r); len(a) == 0 || !bytes.Equal(a, b) {
			t.Fatalf("fragment %s: %d bytes, differ between GETs: %v", r, len(a), !bytes.Equal(a, b))
		}
	}
}
