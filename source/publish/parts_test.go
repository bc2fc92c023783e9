package publish_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// partsFixture is a set of 100 resources p/000..p/099 published with
// MaxEntries 10: ten full parts.
type partsFixture struct {
	t    *testing.T
	st   store.Store
	out  string
	base string
	clk  *clock
	cfg  publish.Config
	t0   time.Time
}

func newPartsFixture(t *testing.T, archives bool) *partsFixture {
	f := &partsFixture{t: t, st: openStore(t, ""), out: t.TempDir(), t0: time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)}
	f.base = server(t, f.out)
	var cs []store.Change
	for i := range 100 {
		cs = append(cs, store.Change{Kind: rs.Created, Time: f.t0, Resource: resource(fmt.Sprintf("p/%03d", i), []byte(fmt.Sprint(i)), f.t0)})
	}
	if _, _, err := f.st.Apply(context.Background(), store.Batch{Changes: cs, Baseline: true,
		Meta: map[string][]byte{store.MetaBaseline: store.FormatBaseline(f.t0)}}); err != nil {
		t.Fatal(err)
	}
	f.clk = &clock{t: f.t0.Add(time.Minute)}
	f.cfg = publish.Config{BaseURL: f.base, Out: f.out, MaxEntries: 10, Archives: archives, ArchivedResourceLists: 3,
		Now: f.clk.Now, Logger: quiet, Sets: []publish.Set{{Name: "default", Store: f.st, ResourceBase: f.base + "r/"}}}
	rep := f.publish()
	if rep.ResourceListParts != 10 || rep.PartsWritten != 10 {
		t.Fatalf("first publish: %+v", rep)
	}
	return f
}

func (f *partsFixture) publish() publish.SetReport {
	f.t.Helper()
	rep, err := publish.Publish(context.Background(), f.cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return rep.Sets[0]
}

// fileID is what tells a rewritten file from an untouched one: the same
// file (inode) with the same mtime.
type fileID struct{ fi os.FileInfo }

func (a fileID) same(b fileID) bool {
	return a.fi != nil && b.fi != nil && os.SameFile(a.fi, b.fi) && a.fi.ModTime().Equal(b.fi.ModTime())
}

// parts returns the published index's parts in order: their file names,
// identities, entry counts and index entries.
func (f *partsFixture) parts() (rs.Head, []string, map[string]fileID, []rs.Entry) {
	f.t.Helper()
	h, es := decodeFile(f.t, filepath.Join(f.out, ".resourcesync/default/resourcelist.xml"))
	if !h.IsIndex() {
		f.t.Fatalf("resourcelist.xml is not an index")
	}
	var names []string
	ids := map[string]fileID{}
	for _, e := range es {
		p := listFile(f.out, f.base, e.Loc)
		fi, err := os.Stat(p)
		if err != nil {
			f.t.Fatal(err)
		}
		names = append(names, filepath.Base(p))
		ids[filepath.Base(p)] = fileID{fi}
	}
	return h, names, ids, es
}

// listed returns every path the published Resource List names, in order,
// and the number of entries of each part; it checks each part's at
// against its index entry.
func (f *partsFixture) listed() ([]string, []int) {
	f.t.Helper()
	_, _, _, idx := f.parts()
	var paths []string
	var counts []int
	for _, e := range idx {
		h, es := decodeFile(f.t, listFile(f.out, f.base, e.Loc))
		if !h.MD.At.Equal(e.MD.At) {
			f.t.Errorf("part %s: at %s, index says %s", e.Loc, h.MD.At, e.MD.At)
		}
		if ix := h.Link(rs.RelIndex); ix != f.base+".resourcesync/default/resourcelist.xml" {
			f.t.Errorf("part %s: rel=index %s", e.Loc, ix)
		}
		counts = append(counts, len(es))
		for _, r := range es {
			paths = append(paths, strings.TrimPrefix(r.Loc, f.base+"r/"))
		}
	}
	return paths, counts
}

// inventory returns the store's paths in order.
func (f *partsFixture) inventory() []string {
	var ps []string
	for r, err := range f.st.Resources(context.Background()) {
		if err != nil {
			f.t.Fatal(err)
		}
		ps = append(ps, r.Path)
	}
	return ps
}

func (f *partsFixture) change(kind rs.Change, path, content string) {
	apply(f.t, f.st, "", kind, path, content, f.clk.Now())
}

// TestPartsOneChangeRewritesOnePart: one change rewrites the part whose
// key range holds it (a create in a full part: that part, split in two);
// every other part file is untouched (same name, inode and mtime, same at
// in the index), the index is rewritten with the run's at, and the list
// still names exactly the inventory.
func TestPartsOneChangeRewritesOnePart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kind    rs.Change
		path    string
		part    int // index of the part that must be replaced
		entries int // entries of the list after the change
		split   bool
	}{
		{"update first part", rs.Updated, "p/003", 0, 100, false},
		{"update middle part", rs.Updated, "p/055", 5, 100, false},
		{"delete", rs.Deleted, "p/042", 4, 99, false},
		{"create in a full part splits it", rs.Created, "p/0999", 9, 101, true},
		{"create before every path", rs.Created, "a", 0, 101, true},
		{"create after every path", rs.Created, "z", 9, 101, true},
	} {
		for _, archives := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/archives=%v", tc.name, archives), func(t *testing.T) {
				f := newPartsFixture(t, archives)
				h0, names0, ids0, idx0 := f.parts()
				time.Sleep(10 * time.Millisecond) // a rewrite would get a later mtime
				f.clk.Set(f.t0.Add(time.Hour))
				f.change(tc.kind, tc.path, "changed")
				rep := f.publish()
				written, parts := 1, 10
				if tc.split {
					written, parts = 2, 11
				}
				if !rep.ResourceList || rep.PartsWritten != written || rep.ResourceListParts != parts || rep.Resources != int64(tc.entries) {
					t.Errorf("report %+v: want %d of %d parts written", rep, written, parts)
				}
				h1, names1, ids1, idx1 := f.parts()
				if !h1.MD.At.Time().Equal(f.t0.Add(time.Hour)) || !h0.MD.At.Time().Equal(f.t0) {
					t.Errorf("index at %s then %s", h0.MD.At, h1.MD.At)
				}
				for i, n := range names1 {
					j := i
					if i > tc.part && tc.split {
						j = i - 1
					}
					if i == tc.part || (tc.split && i == tc.part+1) {
						if slices.Contains(names0, n) || !idx1[i].MD.At.Time().Equal(f.t0.Add(time.Hour)) {
							t.Errorf("part %d not rewritten: %s at %s", i, n, idx1[i].MD.At)
						}
						continue
					}
					if n != names0[j] || !ids1[n].same(ids0[n]) || !idx1[i].MD.At.Equal(idx0[j].MD.At) {
						t.Errorf("part %d touched: %s %+v -> %s %+v", i, names0[j], ids0[names0[j]], n, ids1[n])
					}
				}
				// The replaced part is kept only while an archived index names it.
				old := listFile(f.out, f.base, idx0[tc.part].Loc)
				if exists(old) != archives {
					t.Errorf("replaced part %s kept=%v, want %v", filepath.Base(old), exists(old), archives)
				}
				paths, _ := f.listed()
				if inv := f.inventory(); !slices.Equal(paths, inv) {
					t.Errorf("list names %d paths, inventory has %d", len(paths), len(inv))
				}
				mustWalkClean(t, f.base)
				// Nothing changed: nothing is written.
				f.clk.Set(f.t0.Add(2 * time.Hour))
				if rep := f.publish(); rep.ResourceList || rep.PartsWritten != 0 {
					t.Errorf("unchanged run: %+v", rep)
				}
			})
		}
	}
}

// TestPartsSplitMergeEmpty: a part that outgrows MaxEntries is split in
// even halves; a part emptied by deletions leaves the index; a small part
// is merged into its neighbour; a touch (no journal record) writes nothing.
func TestPartsSplitMergeEmpty(t *testing.T) {
	f := newPartsFixture(t, true)
	step := func(name string, wantWritten int, wantCounts []int, changes func()) {
		t.Helper()
		f.clk.Set(f.clk.Now().Add(time.Hour))
		changes()
		rep := f.publish()
		paths, counts := f.listed()
		if rep.PartsWritten != wantWritten || !slices.Equal(counts, wantCounts) {
			t.Errorf("%s: wrote %d parts, counts %v; want %d, %v", name, rep.PartsWritten, counts, wantWritten, wantCounts)
		}
		if inv := f.inventory(); !slices.Equal(paths, inv) {
			t.Errorf("%s: list names %d paths, inventory has %d", name, len(paths), len(inv))
		}
		mustWalkClean(t, f.base)
	}
	step("split", 2, []int{10, 10, 8, 7, 10, 10, 10, 10, 10, 10, 10}, func() {
		for i := range 5 {
			f.change(rs.Created, fmt.Sprintf("p/025%d", i), "new")
		}
	})
	step("empty a part", 0, []int{10, 10, 8, 7, 10, 10, 10, 10, 10, 10}, func() {
		for i := 90; i < 100; i++ {
			f.change(rs.Deleted, fmt.Sprintf("p/%03d", i), "")
		}
	})
	step("merge a small part", 1, []int{10, 10, 8, 7, 10, 10, 10, 10, 7}, func() {
		for i := 80; i < 88; i++ {
			f.change(rs.Deleted, fmt.Sprintf("p/%03d", i), "")
		}
		// p/088, p/089 left (2 < a quarter of 10... rounded: 2): merged
		// with the 5 of the part before once it shrinks too.
		for i := 75; i < 80; i++ {
			f.change(rs.Deleted, fmt.Sprintf("p/%03d", i), "")
		}
	})
	// A path created in a range whose part was removed lands in the part
	// before it.
	step("create where a part was removed", 1, []int{10, 10, 8, 7, 10, 10, 10, 10, 8}, func() {
		f.change(rs.Created, "p/095", "again")
	})
	step("touch", 0, []int{10, 10, 8, 7, 10, 10, 10, 10, 8}, func() {
		r, err := f.st.Get(context.Background(), "p/010")
		if err != nil {
			t.Fatal(err)
		}
		r.ModTime = r.ModTime.Add(time.Hour)
		if _, _, err := f.st.Apply(context.Background(), store.Batch{Touch: []store.Resource{r}}); err != nil {
			t.Fatal(err)
		}
	})
	// Most parts changed: one full write (16 entries: p/000..p/009,
	// p/0250..p/0254, p/095).
	step("most parts changed", 2, []int{10, 6}, func() {
		for i := 10; i < 95; i++ {
			if _, err := f.st.Get(context.Background(), fmt.Sprintf("p/%03d", i)); err == nil {
				f.change(rs.Deleted, fmt.Sprintf("p/%03d", i), "")
			}
		}
	})
	// Back to MaxEntries entries or fewer: one document, no index.
	f.clk.Set(f.clk.Now().Add(time.Hour))
	for i := range 6 {
		f.change(rs.Deleted, fmt.Sprintf("p/%03d", i), "")
	}
	if rep := f.publish(); rep.PartsWritten != 1 || rep.ResourceListParts != 1 || rep.Resources != 10 {
		t.Errorf("one document: %+v", rep)
	}
	if h, es := decodeFile(t, filepath.Join(f.out, ".resourcesync/default/resourcelist.xml")); h.IsIndex() || len(es) != 10 {
		t.Errorf("resourcelist.xml: index=%v, %d entries", h.IsIndex(), len(es))
	}
	mustWalkClean(t, f.base)
}

// faultStore is the real store with one injected failure: ResourcesIn
// fails on its failIn-th call, PutMeta of failMeta fails.
type faultStore struct {
	store.Store
	failIn   int32
	calls    atomic.Int32
	failMeta string
}

var errInjected = errors.New("injected failure")

func (s *faultStore) ResourcesIn(ctx context.Context, from, to string) iter.Seq2[store.Resource, error] {
	if s.calls.Add(1) == s.failIn {
		return func(yield func(store.Resource, error) bool) { yield(store.Resource{}, errInjected) }
	}
	return s.Store.ResourcesIn(ctx, from, to)
}

func (s *faultStore) PutMeta(ctx context.Context, key string, v []byte) error {
	if key == s.failMeta {
		return errInjected
	}
	return s.Store.PutMeta(ctx, key, v)
}

// TestPartsInterrupted: a run that fails after writing some parts (before
// the index), or after the index (before its meta), leaves a tree whose
// documents all exist and validate; the next run repairs the list and
// removes the parts no document names.
func TestPartsInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failIn   int32
		failMeta string
	}{
		{"after a part, before the index", 2, ""},
		{"after the index, before the meta", 0, "publish.resourcelist"},
	} {
		for _, archives := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/archives=%v", tc.name, archives), func(t *testing.T) {
				f := newPartsFixture(t, archives)
				f.clk.Set(f.t0.Add(time.Hour))
				// Two parts change: p/015 and p/075.
				f.change(rs.Updated, "p/015", "x")
				f.change(rs.Updated, "p/075", "x")
				fs := &faultStore{Store: f.st, failIn: tc.failIn, failMeta: tc.failMeta}
				cfg := f.cfg
				cfg.Sets = []publish.Set{{Name: "default", Store: fs, ResourceBase: f.base + "r/"}}
				if _, err := publish.Publish(context.Background(), cfg); !errors.Is(err, errInjected) {
					t.Fatalf("err = %v, want the injected failure", err)
				}
				mustWalkClean(t, f.base)
				paths, _ := f.listed()
				if len(paths) != 100 {
					t.Errorf("interrupted: list names %d paths", len(paths))
				}
				f.clk.Set(f.t0.Add(2 * time.Hour))
				rep := f.publish()
				if !rep.ResourceList {
					t.Errorf("repair run: %+v", rep)
				}
				mustWalkClean(t, f.base)
				paths, _ = f.listed()
				if inv := f.inventory(); !slices.Equal(paths, inv) {
					t.Errorf("list names %d paths, inventory has %d", len(paths), len(inv))
				}
				// Every part file is named by the index or an archived one.
				named := map[string]bool{}
				_, names, _, _ := f.parts()
				for _, n := range names {
					named[n] = true
				}
				if archives {
					_, arch := decodeFile(t, filepath.Join(f.out, ".resourcesync/default/resourcelist-archive.xml"))
					for _, a := range arch {
						h, es := decodeFile(t, listFile(f.out, f.base, a.Loc))
						for _, e := range es {
							if h.IsIndex() {
								named[filepath.Base(e.Loc)] = true
							}
						}
					}
				}
				des, _ := os.ReadDir(filepath.Join(f.out, ".resourcesync/default/resourcelists/parts"))
				for _, de := range des {
					if !named[de.Name()] && !publish.KeptCompanion(de.Name(), named) {
						t.Errorf("part file %s left, named by no document", de.Name())
					}
				}
			})
		}
	}
}

// TestPartsOlderMeta: the meta of the fingerprint-based format (a part
// count, no part table) gets a full write, and later runs are incremental.
func TestPartsOlderMeta(t *testing.T) {
	f := newPartsFixture(t, true)
	old := `{"Fingerprint":"0123","At":"2026-03-01T10:10:00Z","Gen":"x","Entries":100,"Parts":10,"TopSHA":"abcd"}`
	if err := f.st.PutMeta(context.Background(), "publish.resourcelist", []byte(old)); err != nil {
		t.Fatal(err)
	}
	f.clk.Set(f.t0.Add(time.Hour))
	if rep := f.publish(); !rep.ResourceList || rep.PartsWritten != 10 {
		t.Errorf("after the older meta: %+v, want a full write", rep)
	}
	f.clk.Set(f.t0.Add(2 * time.Hour))
	f.change(rs.Updated, "p/050", "x")
	if rep := f.publish(); rep.PartsWritten != 1 {
		t.Errorf("next change: %+v, want one part written", rep)
	}
	mustWalkClean(t, f.base)
}

// TestPartsMergeBothSides: two small changed parts with one small clean
// part between them: the first merges forward with it, and the second
// must not merge backward into what was just written (that would drop
// the first part's paths from the list).
func TestPartsMergeBothSides(t *testing.T) {
	f := newPartsFixture(t, false)
	del := func(from, to int) {
		for i := from; i < to; i++ {
			f.change(rs.Deleted, fmt.Sprintf("p/%03d", i), "")
		}
	}
	f.clk.Set(f.t0.Add(time.Hour))
	del(40, 49) // part 4 keeps p/049
	f.publish()
	f.clk.Set(f.t0.Add(2 * time.Hour))
	del(30, 39) // part 3 keeps p/039
	del(50, 59) // part 5 keeps p/059
	f.publish()
	paths, counts := f.listed()
	if inv := f.inventory(); !slices.Equal(paths, inv) {
		t.Errorf("list names %v (parts %v), inventory has %d paths", paths, counts, len(inv))
	}
	mustWalkClean(t, f.base)
}

// TestPartsRandomChanges: rounds of random creates, updates and deletes
// (a few, or many in a narrow range, so that parts split, shrink, merge
// and empty); after every publish the list names exactly the inventory,
// no part exceeds MaxEntries, and every part is non-empty.
func TestPartsRandomChanges(t *testing.T) {
	f := newPartsFixture(t, true)
	rng := rand.New(rand.NewPCG(11, 7))
	incremental := 0
	for round := range 40 {
		f.clk.Set(f.t0.Add(time.Duration(round+1) * time.Hour))
		lo := rng.IntN(150)
		width := 1 + rng.IntN(30)
		for range 1 + rng.IntN(12) {
			p := fmt.Sprintf("p/%03d", lo+rng.IntN(width))
			if rng.IntN(3) == 0 {
				p += fmt.Sprint(rng.IntN(10))
			}
			_, err := f.st.Get(context.Background(), p)
			switch {
			case errors.Is(err, store.ErrNotFound):
				f.change(rs.Created, p, "c")
			case err != nil:
				t.Fatal(err)
			case rng.IntN(2) == 0:
				f.change(rs.Deleted, p, "")
			default:
				f.change(rs.Updated, p, fmt.Sprint(round))
			}
		}
		rep := f.publish()
		inv := f.inventory()
		if h, _ := decodeFile(t, filepath.Join(f.out, ".resourcesync/default/resourcelist.xml")); !h.IsIndex() {
			if len(inv) > 10 {
				t.Fatalf("round %d: one document for %d resources", round, len(inv))
			}
			continue
		}
		paths, counts := f.listed()
		if !slices.Equal(paths, inv) {
			t.Fatalf("round %d (%+v): list names %d paths, inventory %d", round, rep, len(paths), len(inv))
		}
		if rep.PartsWritten < rep.ResourceListParts {
			incremental++
		}
		for _, c := range counts {
			if c == 0 || c > 10 {
				t.Errorf("round %d: part counts %v", round, counts)
				break
			}
		}
		if round%10 == 9 {
			mustWalkClean(t, f.base)
		}
	}
	if incremental < 20 {
		t.Errorf("only %d of 40 rounds rewrote some parts only", incremental)
	}
	t.Logf("%d of 40 rounds incremental", incremental)
}
