package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/graphstoretest"
)

func TestContract(t *testing.T) {
	for _, batch := range []int{0, 500} {
		t.Run(map[int]string{0: "default batch", 500: "batch of 500"}[batch], func(t *testing.T) {
			graphstoretest.Run(t, func(t *testing.T) graphstore.Store {
				s, err := boltstore.Open(filepath.Join(t.TempDir(), "graph.db"), &boltstore.Options{NoSync: true, BatchSize: batch})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					s.Close()
				})
				return s
			})
		})
	}
}

func open(t *testing.T, path string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graph.db")
	s := open(t, path)
	graphstoretest.Expect(t, s, nil)
	ctx := context.Background()
	if err := s.ReplaceGraph(ctx, graphstoretest.G1, graphstoretest.Seq(graphstoretest.NT(graphstoretest.BnodeClosure))); err != nil {
		t.Fatal(err)
	}
	before := graphstoretest.All(t, s, graphstoretest.G1)
	s.Close()
	s = open(t, path)
	after := graphstoretest.All(t, s, graphstoretest.G1)
	slices.SortFunc(before, cmpTriple)
	slices.SortFunc(after, cmpTriple)
	if !slices.Equal(before, after) {
		t.Errorf("after reopening:\n%v\nbefore:\n%v", after, before)
	}
	// Blank node labels stay those of the store: a fragment inserted now
	// does not meet them.
	if err := s.ApplyFragment(ctx, graphstoretest.G1, rdf.IRI("http://e/R"), []rdf.Triple{{S: rdf.IRI("http://e/R"), P: rdf.IRI("http://e/p"), O: rdf.Blank("b1")}}); err != nil {
		t.Fatal(err)
	}
	graphstoretest.Expect(t, s, map[string]string{graphstoretest.G1: graphstoretest.BnodeClosure + "<http://e/R> <http://e/p> _:new ."})
}

func cmpTriple(a, b rdf.Triple) int {
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graph.db")
	open(t, path)
	start := time.Now()
	_, err := boltstore.Open(path, &boltstore.Options{LockTimeout: 100 * time.Millisecond})
	if !errors.Is(err, graphstore.ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("second Open took %v: it hangs instead of timing out", d)
	}
}

func TestNotAStore(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, bytes.Repeat([]byte("not a bbolt file "), 1000), 0o600)
	other := filepath.Join(dir, "other.db")
	db, err := bbolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("inventory")); return err })
	db.Close()
	for _, path := range []string{junk, other} {
		if _, err := boltstore.Open(path, nil); !errors.Is(err, graphstore.ErrCorrupt) {
			t.Errorf("Open(%s): %v, want ErrCorrupt", filepath.Base(path), err)
		}
	}
	if _, err := boltstore.Open(filepath.Join(dir, "no", "such", "graph.db"), nil); err == nil || errors.Is(err, graphstore.ErrCorrupt) {
		t.Errorf("Open in a missing directory: %v, want a plain I/O error", err)
	}
	s, err := boltstore.OpenDir(filepath.Join(dir, "made", "here"), &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatalf("OpenDir: %v", err)
	}
	if s.Path() != boltstore.PathIn(filepath.Join(dir, "made", "here")) {
		t.Errorf("OpenDir opened %s", s.Path())
	}
	s.Close()
}

// TestTerms stores terms whose encodings are unusual: long enough to be
// keyed by hash, with NUL bytes, language tags and datatypes that look
// alike.
func TestTerms(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "graph.db"))
	ctx := context.Background()
	long := strings.Repeat("long ", 300)
	r, p := rdf.IRI("http://e/R"), rdf.IRI("http://e/p")
	objs := []rdf.Term{
		rdf.Literal(long), rdf.Literal(long + "x"), rdf.IRI("http://e/" + long),
		rdf.Literal("a\x00b"), rdf.Literal(""), rdf.LangLiteral("chat", "fr"), rdf.LangLiteral("chat", "en"),
		rdf.TypedLiteral("1", "http://www.w3.org/2001/XMLSchema#integer"), rdf.TypedLiteral("1", "http://e/int"),
		rdf.Literal("1"), rdf.IRI("1"), rdf.Literal("\xff invalid UTF-8"), rdf.Literal("ünïcödé"),
	}
	var ts []rdf.Triple
	for _, o := range objs {
		ts = append(ts, rdf.Triple{S: r, P: p, O: o})
	}
	ts = append(ts, rdf.Triple{S: rdf.IRI("http://e/" + long), P: rdf.IRI("http://e/" + long + "p"), O: rdf.Literal(long)})
	if err := s.ApplyFragment(ctx, graphstoretest.G1, r, ts); err != nil {
		t.Fatal(err)
	}
	got := graphstoretest.All(t, s, graphstoretest.G1)
	slices.SortFunc(got, cmpTriple)
	slices.SortFunc(ts, cmpTriple)
	if !slices.Equal(got, ts) {
		t.Errorf("got\n%q\nwant\n%q", got, ts)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestDictionaryBounded changes one literal many times: the dictionary
// keeps only the terms in use.
func TestDictionaryBounded(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "graph.db"))
	ctx := context.Background()
	r := rdf.IRI("http://e/R")
	for i := range 200 {
		ts := []rdf.Triple{{S: r, P: rdf.IRI("http://e/p"), O: rdf.Literal(fmt.Sprint("version ", i))},
			{S: r, P: rdf.IRI("http://e/long"), O: rdf.Literal(fmt.Sprint(strings.Repeat("long ", 100), i))},
			{S: r, P: rdf.IRI("http://e/q"), O: rdf.Blank("b")},
			{S: rdf.Blank("b"), P: rdf.IRI(fmt.Sprint("http://e/p", i)), O: rdf.Literal("x")}}
		if err := s.ApplyFragment(ctx, graphstoretest.G1, r, ts); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// R, p, long, q, the last p<i> and the long literal (short literals
	// live in the index keys).
	if want := (boltstore.Stats{Graphs: 1, Triples: 4, Terms: 6}); st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
	if err := s.ApplyFragment(ctx, graphstoretest.G1, r, nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Stats(ctx); st != (boltstore.Stats{}) {
		t.Errorf("Stats of the emptied store = %+v", st)
	}
}

// TestCrashedReplace leaves a ReplaceGraph half-done (it panics after its
// batches are committed, as a crash would stop it) and checks that Open deletes what it wrote.
func TestCrashedReplace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graph.db")
	s, err := boltstore.Open(path, &boltstore.Options{NoSync: true, BatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const old = `<http://e/a> <http://e/p> _:x .
_:x <http://e/p> "old" .`
	if err := s.ReplaceGraph(ctx, graphstoretest.G1, graphstoretest.Seq(graphstoretest.NT(old))); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() { recover() }()
		defer boltstore.SetLoadHook(func(n int) {
			if n >= 1000 {
				panic("crash")
			}
		})()
		s.ReplaceGraph(ctx, graphstoretest.G1, func(yield func(rdf.Triple, error) bool) {
			for i := range 1000 {
				yield(rdf.Triple{S: rdf.IRI(fmt.Sprint("http://e/s", i)), P: rdf.IRI("http://e/p"), O: rdf.Blank(fmt.Sprint(i))}, nil)
			}
		})
	}()
	if st, _ := s.Stats(ctx); st.Triples < 900 {
		t.Fatalf("Stats after the crash = %+v; the test wants a half-written graph", st)
	}
	graphstoretest.Expect(t, s, map[string]string{graphstoretest.G1: old}) // Check accepts a graph being loaded
	s.Close()
	s = open(t, path)
	graphstoretest.Expect(t, s, map[string]string{graphstoretest.G1: old})
	if st, _ := s.Stats(ctx); st != (boltstore.Stats{Graphs: 1, Triples: 2, Terms: 2}) {
		t.Errorf("Stats after Open = %+v, want the old graph only", st)
	}
}

// TestHostile writes what a hostile snapshot or fragment may hold: labels,
// IRIs and literals beyond bbolt's key limit, a graph name beyond it.
// Each write either works (and reads back) or fails with an error; none
// panics or damages the store.
func TestHostile(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "graph.db"))
	ctx := context.Background()
	huge := strings.Repeat("x", 70000)
	p := rdf.IRI("http://e/p")
	ts := []rdf.Triple{
		{S: rdf.Blank(huge), P: p, O: rdf.Blank(huge + "y")},
		{S: rdf.Blank(huge + "y"), P: p, O: rdf.Literal(huge)},
		{S: rdf.IRI("http://e/" + huge), P: rdf.IRI("http://e/p" + huge), O: rdf.Blank(huge)},
	}
	if err := s.ReplaceGraph(ctx, graphstoretest.G1, graphstoretest.Seq(ts)); err != nil {
		t.Fatalf("ReplaceGraph: %v", err)
	}
	if got := graphstoretest.All(t, s, graphstoretest.G1); !rdf.Isomorphic(got, ts) {
		t.Errorf("read back: %s", rdf.IsomorphicDiff(got, ts))
	}
	if err := s.ApplyFragment(ctx, graphstoretest.G1, rdf.IRI("http://e/"+huge), nil); err != nil {
		t.Fatalf("ApplyFragment: %v", err)
	}
	if err := s.ReplaceGraph(ctx, "http://e/"+huge, graphstoretest.Seq(ts)); err == nil {
		t.Log("a 70 kB graph name was accepted")
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestReplaceGraphRefusedLeavesFile: a ReplaceGraph whose triples fail
// part way (a snapshot refused at its cap) leaves the store's file as it
// was, the graph intact and no spool file behind; a spool a killed
// process left is deleted by Open.
func TestReplaceGraphRefusedLeavesFile(t *testing.T) {
	dir := t.TempDir()
	s, err := boltstore.OpenDir(dir, &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	old := rdf.Triple{S: rdf.IRI("http://x/old"), P: rdf.IRI("http://x/p"), O: rdf.Literal("kept")}
	if err := s.ReplaceGraph(ctx, "http://g/", func(yield func(rdf.Triple, error) bool) { yield(old, nil) }); err != nil {
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
	refused := errors.New("snapshot refused at its cap")
	err = s.ReplaceGraph(ctx, "http://g/", func(yield func(rdf.Triple, error) bool) {
		for i := range 50_000 {
			if !yield(rdf.Triple{S: rdf.IRI(fmt.Sprintf("http://x/r%d", i)), P: rdf.IRI("http://x/p"), O: rdf.Literal(fmt.Sprintf("literal number %d", i))}, nil) {
				return
			}
		}
		yield(rdf.Triple{}, refused)
	})
	if !errors.Is(err, refused) {
		t.Fatalf("ReplaceGraph: %v, want the iterator's error", err)
	}
	if after := size(); after != before {
		t.Errorf("graph.db grew from %d to %d bytes with a refused snapshot", before, after)
	}
	var got []rdf.Triple
	for tr, err := range s.Triples(ctx, "http://g/") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tr)
	}
	if len(got) != 1 || got[0] != old {
		t.Errorf("graph after the refusal: %v", got)
	}
	s.Close()
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("the store's directory holds %d entries, want graph.db alone", len(ents))
	}

	// A killed process's spool (where its name could not be unlinked).
	left := filepath.Join(dir, boltstore.FileName+".spool-123")
	if err := os.WriteFile(left, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = boltstore.OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(left); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a leftover spool survived Open: %v", err)
	}
}
