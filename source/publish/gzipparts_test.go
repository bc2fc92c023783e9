package publish_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/memstore"
)

// gzParts returns the part files of out's default set, by name, decoded.
func gzParts(t *testing.T, out string) map[string][]byte {
	t.Helper()
	dir := filepath.Join(out, ".resourcesync/default/resourcelists/parts")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), publish.GzipSuffix)
		if !ok {
			t.Errorf("part %s stored plain", e.Name())
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		got[name] = b
	}
	return got
}

// TestGzipParts: with GzipLists every Resource List part is stored only
// as NAME.xml.gz, the index names NAME.xml, and the parts hold exactly
// the inventory; a rerun recognises them (nothing written), a change
// rewrites one part and removes the part it replaces; a replica renders
// the same compressed bytes (the recorded sha-256 is of the XML).
func TestGzipParts(t *testing.T) {
	ctx := context.Background()
	db := memstore.New()
	a, b := db.Open("default"), db.Open("default")
	defer a.Close()
	defer b.Close()
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	var cs []store.Change
	for i := range 100 {
		cs = append(cs, store.Change{Kind: rs.Created, Time: t0, Resource: resource(fmt.Sprintf("p/%03d", i), []byte(fmt.Sprint(i)), t0)})
	}
	if _, _, err := a.Apply(ctx, store.Batch{Changes: cs, Baseline: true,
		Meta: map[string][]byte{store.MetaBaseline: store.FormatBaseline(t0)}}); err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: t0.Add(time.Minute)}
	outA, outB := t.TempDir(), t.TempDir()
	const base = "http://lb.example/"
	cfg := func(out string, st store.Store, follow bool) publish.Config {
		return publish.Config{BaseURL: base, Out: out, MaxEntries: 10, Replicas: true, GzipLists: true,
			Now: clk.Now, Logger: quiet, Sets: []publish.Set{{Name: "default", Store: st, ResourceBase: base + "r/", Follow: follow}}}
	}
	run := func(c publish.Config) publish.SetReport {
		t.Helper()
		rep, err := publish.Publish(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Sets[0]
	}
	check := func(what string) map[string][]byte {
		t.Helper()
		parts := gzParts(t, outA)
		h, idx := decodeFile(t, filepath.Join(outA, ".resourcesync/default/resourcelist.xml"))
		if !h.IsIndex() || len(idx) != len(parts) {
			t.Fatalf("%s: index of %d, %d part files", what, len(idx), len(parts))
		}
		var paths []string
		for _, e := range idx {
			name := strings.TrimPrefix(e.Loc, base+".resourcesync/default/resourcelists/parts/")
			doc, ok := parts[name]
			if !ok {
				t.Fatalf("%s: the index names %s, not stored", what, e.Loc)
			}
			for r, err := range rs.NewDecoder(bytes.NewReader(doc)).All() {
				if err != nil {
					t.Fatalf("%s: %s: %v", what, name, err)
				}
				paths = append(paths, strings.TrimPrefix(r.Loc, base+"r/"))
			}
		}
		var inv []string
		for r, err := range a.Resources(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			inv = append(inv, r.Path)
		}
		if !slices.Equal(paths, inv) {
			t.Errorf("%s: parts name %d paths, inventory has %d", what, len(paths), len(inv))
		}
		return parts
	}
	if sr := run(cfg(outA, a, false)); sr.PartsWritten != 10 {
		t.Fatalf("first publish: %+v", sr)
	}
	p0 := check("first publish")
	clk.Set(t0.Add(time.Hour))
	if sr := run(cfg(outA, a, false)); sr.ResourceList || sr.PartsWritten != 0 {
		t.Errorf("unchanged rerun: %+v", sr)
	}
	if _, _, err := a.Apply(ctx, store.Batch{Changes: []store.Change{{Kind: rs.Updated, Time: clk.Now(),
		Resource: resource("p/055", []byte("changed"), clk.Now())}}}); err != nil {
		t.Fatal(err)
	}
	if sr := run(cfg(outA, a, false)); sr.PartsWritten != 1 {
		t.Errorf("one change: %+v", sr)
	}
	p1 := check("one change")
	kept := 0
	for n := range p0 {
		if _, ok := p1[n]; ok {
			kept++
		}
	}
	if kept != 9 || len(p1) != 10 {
		t.Errorf("one change: %d of 10 parts kept, %d stored", kept, len(p1))
	}
	// A replica renders from the meta, compressed too, to the same bytes.
	if sr := run(cfg(outB, b, true)); sr.Behind {
		t.Fatalf("render: %+v", sr)
	}
	sameTree(t, "replica", outA, outB)
}

// TestGzipSingleList: with GzipLists a Resource List of one document is
// stored as resourcelist.xml.gz only (and its archived generation too);
// a rerun writes nothing; when it grows into an index (stored plain) the
// compressed form is removed, and when it shrinks back, the plain one.
func TestGzipSingleList(t *testing.T) {
	for _, archives := range []bool{false, true} {
		t.Run(fmt.Sprint("archives=", archives), func(t *testing.T) {
			ctx := context.Background()
			st := memstore.New().Open("default")
			defer st.Close()
			t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
			clk := &clock{t: t0.Add(time.Minute)}
			apply := func(kind rs.Change, from, to int) {
				var cs []store.Change
				for i := from; i < to; i++ {
					cs = append(cs, store.Change{Kind: kind, Time: clk.Now(), Resource: resource(fmt.Sprintf("p/%03d", i), []byte(fmt.Sprint(i)), clk.Now())})
				}
				b := store.Batch{Changes: cs}
				if from == 0 {
					b.Baseline, b.Meta = true, map[string][]byte{store.MetaBaseline: store.FormatBaseline(t0)}
				}
				if _, _, err := st.Apply(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
			out := t.TempDir()
			cfg := publish.Config{BaseURL: "http://x.example/", Out: out, MaxEntries: 10, Archives: archives, GzipLists: true,
				Now: clk.Now, Logger: quiet, Sets: []publish.Set{{Name: "default", Store: st, ResourceBase: "http://x.example/r/"}}}
			run := func() publish.SetReport {
				t.Helper()
				clk.Set(clk.Now().Add(time.Hour))
				rep, err := publish.Publish(ctx, cfg)
				if err != nil {
					t.Fatal(err)
				}
				return rep.Sets[0]
			}
			list := filepath.Join(out, ".resourcesync/default/resourcelist.xml")
			form := func(what string, gz bool, entries int) {
				t.Helper()
				_, perr := os.Stat(list)
				_, zerr := os.Stat(list + publish.GzipSuffix)
				if (perr == nil) == gz || (zerr == nil) != gz {
					t.Fatalf("%s: plain %v, compressed %v; want compressed %v", what, perr, zerr, gz)
				}
				if !gz {
					return
				}
				b, _ := os.ReadFile(list + publish.GzipSuffix)
				zr, err := gzip.NewReader(bytes.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, err := range rs.NewDecoder(zr).All() {
					if err != nil {
						t.Fatal(err)
					}
					n++
				}
				if n != entries {
					t.Errorf("%s: %d entries, want %d", what, n, entries)
				}
			}
			apply(rs.Created, 0, 5)
			run()
			form("5 resources", true, 5)
			if sr := run(); sr.ResourceList {
				t.Errorf("unchanged rerun: %+v", sr)
			}
			apply(rs.Created, 5, 25)
			run()
			form("25 resources: an index", false, 0)
			apply(rs.Deleted, 3, 25)
			run()
			form("3 resources", true, 3)
			if sr := run(); sr.ResourceList {
				t.Errorf("unchanged rerun: %+v", sr)
			}
			if archives {
				_, es := decodeFile(t, filepath.Join(out, ".resourcesync/default/resourcelist-archive.xml"))
				if len(es) != 2 {
					t.Errorf("archive names %d generations, want 2", len(es))
				}
			}
		})
	}
}
