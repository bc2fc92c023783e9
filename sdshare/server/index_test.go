package server

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// TestExternalSort: a collection sorted in many small runs, merged in
// rounds, gives the same graph file, fragments and version as one sorted
// in memory.
func TestExternalSort(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.nt"), []byte(genData(1500)), 0o644)
	os.WriteFile(filepath.Join(dir, "b.nt"), []byte(genData(300)+cycleDoc("c", 20, 3, "1")), 0o644)
	open := func() (*Server, []byte) {
		s, err := Open(context.Background(), Config{BaseURL: "http://127.0.0.1/", StateDir: t.TempDir(), NoSync: true,
			Collections: []CollectionConfig{{Name: "c", Path: dir}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		v := s.Collection("c").version()
		b := make([]byte, v.gf.base.size)
		if _, err := v.gf.base.f.ReadAt(b, 0); err != nil {
			t.Fatal(err)
		}
		return s, b
	}
	one, oneFile := open()
	defer func(r, w int) { sortRunBytes, mergeWidth = r, w }(sortRunBytes, mergeWidth)
	sortRunBytes, mergeWidth = 4096, 3
	many, manyFile := open()
	if !bytes.Equal(oneFile, manyFile) {
		t.Fatal("the graph files differ")
	}
	v1, v2 := one.Collection("c").version(), many.Collection("c").version()
	if v1.key != v2.key || v1.gf.triples != v2.gf.triples || v1.gf.resources != v2.gf.resources || v1.gf.triples == 0 {
		t.Fatalf("versions %s %d/%d and %s %d/%d", v1.key, v1.gf.triples, v1.gf.resources, v2.key, v2.gf.triples, v2.gf.resources)
	}
	if strings.Count(string(oneFile), "\n") != v1.gf.triples {
		t.Errorf("graph file of %d lines, %d triples", strings.Count(string(oneFile), "\n"), v1.gf.triples)
	}
	for _, r := range []string{"http://ex/r0", "http://ex/r1499", cycleRes} {
		a, err1 := one.Collection("c").FragmentNT(context.Background(), r)
		b, err2 := many.Collection("c").FragmentNT(context.Background(), r)
		if err1 != nil || err2 != nil || len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("fragment %s: %v %v\n%s\n%s", r, err1, err2, a, b)
		}
	}
}

// FuzzGraphRecord: a statement's graph record gives it back (lookups
// parse records with parseLines), and hasBlankLine and blankObject agree
// with the statement.
func FuzzGraphRecord(f *testing.F) {
	for _, s := range []string{
		"<http://a/b> <http://p/q> \"x y . z\"@en .\n",
		"_:b1 <http://p> _:b2 .\n",
		"<http://a> <http://p> \"1\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n",
		"<http://a> <http://p> \"tab\\t \\\"q\\\" \\u00e9\" .\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		for tr, err := range rdf.Parse(strings.NewReader(doc), rdf.NTriples, "") {
			if err != nil {
				return
			}
			rec, err := record(tr)
			if err != nil {
				continue
			}
			key, line := splitRecord(rec)
			if key != termKey(tr.S) {
				t.Fatalf("key %q of %v", key, tr)
			}
			ts, err := parseLines([]string{line})
			if err != nil || len(ts) != 1 || ts[0] != tr {
				t.Fatalf("%q: %v %v, want %v", line, ts, err, tr)
			}
			b, ok := blankObject(line)
			if ok != tr.O.IsBlank() || ok && b != tr.O.Value {
				t.Fatalf("blankObject(%q) = %q %v", line, b, ok)
			}
			if hasBlankLine(line) != (tr.S.IsBlank() || tr.O.IsBlank()) {
				t.Fatalf("hasBlankLine(%q)", line)
			}
		}
	})
}

// FuzzCacheRec: a fragment cache record never panics its parser, and a
// record's line parses back to it.
func FuzzCacheRec(f *testing.F) {
	f.Add("http://ex/a", int64(12), true, int64(3), false)
	f.Fuzz(func(t *testing.T, iri string, size int64, kept bool, off int64, over bool) {
		parseCacheRec(iri)
		if strings.ContainsAny(iri, "\x00\n") {
			return
		}
		r := cacheRec{iri: iri, size: size, kept: kept, koff: off, klen: size, over: over}
		r.raw[3], r.sha[7] = 1, 2
		got, err := parseCacheRec(r.line())
		if err != nil || got.line() != r.line() {
			t.Fatalf("%+v: %+v %v", r, got, err)
		}
	})
}

// TestReloadFollowsTheChange: a change of one file of a directory
// collection parses that file only and compares its resources only; a
// collection of one file is compared whole.
func TestReloadFollowsTheChange(t *testing.T) {
	defer func(w time.Duration) { racyWindow = w }(racyWindow)
	racyWindow = 0 // the files' mtimes are trusted at once
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "big.nt"), []byte(genData(2000)), 0o644)
	small := filepath.Join(dir, "small.nt")
	os.WriteFile(small, []byte("<http://ex/small> <http://ex/v> \"1\" .\n<http://ex/gone> <http://ex/v> \"1\" .\n"), 0o644)
	s, err := Open(context.Background(), Config{BaseURL: "http://127.0.0.1/", StateDir: t.TempDir(), NoSync: true,
		Collections: []CollectionConfig{{Name: "c", Path: dir}, {Name: "one", Path: filepath.Join(dir, "big.nt")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := s.Collection("c")
	os.WriteFile(small, []byte("<http://ex/small> <http://ex/v> \"22\" .\n<http://ex/new> <http://ex/v> \"1\" .\n"), 0o644)
	rep, err := c.Load(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	want := LoadReport{Updated: 1, Created: 1, Deleted: 1, Resources: 2002, Triples: 5*2000 + 2, FilesRead: 1, Compared: 3}
	if rep != want {
		t.Errorf("reload after a change of small.nt: %+v, want %+v", rep, want)
	}
	if b, _ := c.FragmentNT(context.Background(), "http://ex/small"); !strings.Contains(string(b), `"22"`) {
		t.Errorf("fragment after the change: %s", b)
	}
	if b, _ := c.FragmentNT(context.Background(), "http://ex/r7"); !strings.Contains(string(b), `"Resource 7"`) {
		t.Errorf("an unchanged file's fragment after the change: %s", b)
	}
	one := s.Collection("one")
	rep, err = one.Load(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if want := (LoadReport{Resources: 2000, Triples: 5 * 2000}); rep != want {
		t.Errorf("forced reload of an unchanged one-file collection: %+v, want %+v", rep, want)
	}
	f, _ := os.OpenFile(filepath.Join(dir, "big.nt"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("<http://ex/more> <http://ex/v> \"1\" .\n")
	f.Close()
	rep, err = one.Load(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if want := (LoadReport{Created: 1, Resources: 2001, Triples: 5*2000 + 1, FilesRead: 1, Compared: 2001}); rep != want {
		t.Errorf("reload of a changed one-file collection: %+v, want %+v", rep, want)
	}
}
