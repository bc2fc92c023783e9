package publish_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// changeListIndex returns the Change List Index's entries.
func changeListIndex(t *testing.T, out string) []rs.Entry {
	t.Helper()
	h, es := decodeFile(t, filepath.Join(out, ".resourcesync/default/changelist.xml"))
	if !h.IsIndex() || h.MD.Capability != rs.CapChangeList {
		t.Fatalf("changelist.xml is not a Change List Index: %+v", h)
	}
	for i := range es {
		if i > 0 && !es[i-1].MD.Until.Equal(es[i].MD.From) {
			t.Errorf("lists %d and %d not contiguous: until %s, from %s", i-1, i, es[i-1].MD.Until, es[i].MD.From)
		}
		if open := es[i].MD.Until.IsZero(); open != (i == len(es)-1) {
			t.Errorf("list %d open=%v", i, open)
		}
	}
	return es
}

// listFile returns the file of the list at loc.
func listFile(out, base, loc string) string {
	return filepath.Join(out, filepath.FromSlash(strings.TrimPrefix(loc, base)))
}

type snapshot map[string]struct {
	b   string
	mod time.Time
}

func snap(t *testing.T, out, base string, es []rs.Entry) snapshot {
	s := snapshot{}
	for _, e := range es {
		f := listFile(out, base, e.Loc)
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(f)
		s[e.Loc] = struct {
			b   string
			mod time.Time
		}{string(b), fi.ModTime()}
	}
	return s
}

func TestChangeListRotation(t *testing.T) {
	out := t.TempDir()
	st := openStore(t, "")
	base := server(t, out)
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	clk := &clock{}
	cfg := publish.Config{BaseURL: base, Out: out, Archives: true, Now: clk.Now, Logger: quiet,
		Sets: []publish.Set{{Name: "default", Store: st, ResourceBase: base + "r/"}}}
	run := func(at time.Time) publish.SetReport {
		t.Helper()
		clk.Set(at)
		rep, err := publish.Publish(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		mustWalkClean(t, base)
		return rep.Sets[0]
	}
	// Three periods of changes.
	apply(t, st, "", rs.Created, "a", "a1", t0)
	apply(t, st, "", rs.Created, "b", "b1", t0.Add(10*time.Minute))
	apply(t, st, "", rs.Updated, "a", "a2", t0.Add(time.Hour))
	apply(t, st, "", rs.Deleted, "b", "", t0.Add(time.Hour+20*time.Minute))
	apply(t, st, "", rs.Created, "c", "c1", t0.Add(115*time.Minute))
	sr := run(t0.Add(2*time.Hour + 10*time.Minute))
	if sr.NewlyClosed != 2 || sr.OpenEntries != 1 || sr.ChangeLists != 3 {
		t.Errorf("report %+v: want 2 closed and an open list with 1 entry", sr)
	}
	es := changeListIndex(t, out)
	if len(es) != 3 {
		t.Fatalf("index has %d lists, want 3", len(es))
	}
	h11 := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	if !es[0].MD.From.Time().Equal(t0) || !es[0].MD.Until.Time().Equal(h11) || !es[2].MD.From.Time().Equal(h11.Add(time.Hour)) {
		t.Errorf("boundaries: %s..%s, %s..%s, %s..", es[0].MD.From, es[0].MD.Until, es[1].MD.From, es[1].MD.Until, es[2].MD.From)
	}
	var got []string
	for _, e := range es {
		lh, les := decodeFile(t, listFile(out, base, e.Loc))
		if !lh.MD.From.Equal(e.MD.From) || !lh.MD.Until.Equal(e.MD.Until) {
			t.Errorf("%s: head %s..%s, index %s..%s", e.Loc, lh.MD.From, lh.MD.Until, e.MD.From, e.MD.Until)
		}
		for _, le := range les {
			got = append(got, fmt.Sprintf("%s %s %s", strings.TrimPrefix(le.Loc, base), le.MD.Change, le.MD.DateTime.Time().Format("15:04")))
			if le.LastMod.IsZero() || !le.MD.HasLength || le.MD.Type == "" || len(le.MD.Hashes) != 2 {
				t.Errorf("entry lacks metadata: %+v", le)
			}
		}
	}
	want := []string{"r/a created 10:10", "r/b created 10:20", "r/a updated 11:10", "r/b deleted 11:30", "r/c created 12:05"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("entries %q, want %q", got, want)
	}
	closed := snap(t, out, base, es[:2])

	// A rerun with no change leaves the closed lists untouched.
	time.Sleep(10 * time.Millisecond)
	if sr := run(t0.Add(2*time.Hour + 20*time.Minute)); sr.NewlyClosed != 0 || sr.OpenEntries != 1 {
		t.Errorf("rerun: %+v", sr)
	}
	if again := snap(t, out, base, es[:2]); fmt.Sprint(again) != fmt.Sprint(closed) {
		t.Errorf("closed lists rewritten by a rerun")
	}

	// The period ends with no further change: the open list closes at 13:00
	// and keeps its URL; an empty list opens.
	if sr := run(t0.Add(2*time.Hour + 55*time.Minute)); sr.NewlyClosed != 1 || sr.OpenEntries != 0 {
		t.Errorf("at 13:05: %+v", sr)
	}
	es2 := changeListIndex(t, out)
	if len(es2) != 4 || es2[2].Loc != es[2].Loc || !es2[3].MD.From.Time().Equal(h11.Add(2*time.Hour)) {
		t.Errorf("after closing: %+v", es2)
	}
	if again := snap(t, out, base, es[:2]); fmt.Sprint(again) != fmt.Sprint(closed) {
		t.Errorf("closed lists rewritten")
	}

	// An idle Source makes no empty lists: the open list runs until the
	// period of its first change ends.
	run(t0.Add(6 * time.Hour))
	apply(t, st, "", rs.Updated, "c", "c2", t0.Add(6*time.Hour+time.Minute))
	run(t0.Add(6*time.Hour + 2*time.Minute))
	if sr := run(t0.Add(7 * time.Hour)); sr.NewlyClosed != 1 {
		t.Errorf("at 17:10: %+v", sr)
	}
	es3 := changeListIndex(t, out)
	if len(es3) != 5 || !es3[3].MD.From.Time().Equal(h11.Add(2*time.Hour)) || !es3[3].MD.Until.Time().Equal(h11.Add(6*time.Hour)) {
		t.Errorf("idle period: %+v", es3[3:])
	}
	_, arch := decodeFile(t, filepath.Join(out, ".resourcesync/default/changelist-archive.xml"))
	if len(arch) != 4 {
		t.Errorf("archive names %d lists, want 4", len(arch))
	}
}

func TestChangeListSplitByCount(t *testing.T) {
	out := t.TempDir()
	st := openStore(t, "")
	base := server(t, out)
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	// 8 records at one datetime, 2 at a later one: lists of 3 entries.
	for i := range 8 {
		apply(t, st, "", rs.Created, fmt.Sprint("x", i), "x", t0)
	}
	apply(t, st, "", rs.Created, "y", "y", t0.Add(time.Minute))
	apply(t, st, "", rs.Created, "z", "z", t0.Add(time.Minute))
	cfg := publish.Config{BaseURL: base, Out: out, MaxEntries: 3, Logger: quiet,
		Now:  func() time.Time { return t0.Add(2 * time.Minute) },
		Sets: []publish.Set{{Name: "default", Store: st, ResourceBase: base + "r/"}}}
	rep, err := publish.Publish(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustWalkClean(t, base)
	es := changeListIndex(t, out)
	var n []int
	for _, e := range es {
		_, les := decodeFile(t, listFile(out, base, e.Loc))
		n = append(n, len(les))
	}
	if fmt.Sprint(n) != "[3 3 3 1]" || rep.Sets[0].OpenEntries != 1 {
		t.Errorf("list sizes %v, report %+v", n, rep.Sets[0])
	}
	if !es[0].MD.Until.Equal(es[0].MD.From) {
		t.Errorf("first list %s..%s: a split at one datetime has from == until", es[0].MD.From, es[0].MD.Until)
	}
	// Resource List split too: 10 resources, 3 per part.
	h, parts := decodeFile(t, filepath.Join(out, ".resourcesync/default/resourcelist.xml"))
	if !h.IsIndex() || len(parts) != 4 {
		t.Errorf("resource list index with %d parts (index %v)", len(parts), h.IsIndex())
	}
}

func TestEmptyJournalStartsAtFirstRun(t *testing.T) {
	out := t.TempDir()
	st := openStore(t, "")
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	cfg := publish.Config{BaseURL: "http://127.0.0.1:1/", Out: out, Logger: quiet, Now: func() time.Time { return t0 },
		Sets: []publish.Set{{Name: "default", Store: st, ResourceBase: "http://127.0.0.1:1/r/"}}}
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	es := changeListIndex(t, out)
	if len(es) != 1 || !es[0].MD.From.Time().Equal(t0) {
		t.Errorf("index %+v", es)
	}
}

func TestResourceListArchive(t *testing.T) {
	out := t.TempDir()
	st := openStore(t, "")
	base := server(t, out)
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	clk := &clock{}
	cfg := publish.Config{BaseURL: base, Out: out, Archives: true, ArchivedResourceLists: 2, MaxEntries: 2,
		Now: clk.Now, Logger: quiet, Sets: []publish.Set{{Name: "default", Store: st, ResourceBase: base + "r/"}}}
	var ats []time.Time
	for i := range 4 {
		at := t0.Add(time.Duration(i) * time.Hour)
		apply(t, st, "", rs.Created, fmt.Sprint("f", i), "x", at)
		clk.Set(at.Add(time.Minute))
		ats = append(ats, at.Add(time.Minute))
		if _, err := publish.Publish(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		mustWalkClean(t, base)
	}
	_, arch := decodeFile(t, filepath.Join(out, ".resourcesync/default/resourcelist-archive.xml"))
	if len(arch) != 2 || !arch[0].MD.At.Time().Equal(ats[1]) || !arch[1].MD.At.Time().Equal(ats[2]) {
		t.Fatalf("archive %+v", arch)
	}
	for i, e := range arch {
		h, es := decodeFile(t, listFile(out, base, e.Loc))
		if !h.MD.At.Equal(e.MD.At) || (i == 1 && (!h.IsIndex() || len(es) != 2)) {
			t.Errorf("archived list %s: %+v, %d entries", e.Loc, h.MD, len(es))
		}
	}
	gens, _ := os.ReadDir(filepath.Join(out, ".resourcesync/default/resourcelists"))
	if len(gens) != 3+1 { // and the parts they share
		t.Errorf("%d generations kept, want 3 and the parts", len(gens))
	}
	// The Capability List names resourcelist.xml (the URL the parts'
	// rel="index" names), a copy of the current generation's document.
	_, caps := decodeFile(t, filepath.Join(out, ".resourcesync/default/capabilitylist.xml"))
	top, _ := os.ReadFile(filepath.Join(out, ".resourcesync/default/resourcelist.xml"))
	copies := 0
	for _, g := range gens {
		if b, err := os.ReadFile(filepath.Join(out, ".resourcesync/default/resourcelists", g.Name(), "resourcelist.xml")); err == nil && string(b) == string(top) {
			copies++
		}
	}
	if caps[0].MD.Capability != rs.CapResourceList || !strings.HasSuffix(caps[0].Loc, "/default/resourcelist.xml") || copies != 1 {
		t.Errorf("capability list names %s", caps[0].Loc)
	}
}

// TestResourceListArchiveOtherOut: a state published into one output tree
// and then into another (`publish --out` first, `serve` on the same state
// later) lists in the second tree's Resource List Archive only the
// generations that tree holds: the others would answer 404.
func TestResourceListArchiveOtherOut(t *testing.T) {
	outA, outB := t.TempDir(), t.TempDir()
	st := openStore(t, "")
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	clk := &clock{}
	cfg := publish.Config{BaseURL: "http://127.0.0.1:1/", Out: outA, Archives: true, ArchivedResourceLists: 5,
		Now: clk.Now, Logger: quiet, Sets: []publish.Set{{Name: "default", Store: st, ResourceBase: "http://127.0.0.1:1/r/"}}}
	for i := range 3 {
		at := t0.Add(time.Duration(i) * time.Hour)
		apply(t, st, "", rs.Created, fmt.Sprint("f", i), "x", at)
		clk.Set(at.Add(time.Minute))
		if i == 2 {
			cfg.Out = outB
		}
		if _, err := publish.Publish(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	_, archA := decodeFile(t, filepath.Join(outA, ".resourcesync/default/resourcelist-archive.xml"))
	if len(archA) != 1 {
		t.Fatalf("first tree's archive: %d entries, want 1", len(archA))
	}
	_, archB := decodeFile(t, filepath.Join(outB, ".resourcesync/default/resourcelist-archive.xml"))
	for _, e := range archB {
		rel := strings.TrimPrefix(e.Loc, cfg.BaseURL)
		if _, err := os.Stat(filepath.Join(outB, filepath.FromSlash(rel))); err != nil {
			t.Errorf("second tree's archive lists %s, which it does not hold: %v", e.Loc, err)
		}
	}
}

func TestChangeListCloseGrace(t *testing.T) {
	out := t.TempDir()
	st := openStore(t, "")
	t0 := time.Date(2026, 3, 1, 10, 59, 50, 0, time.UTC)
	apply(t, st, "", rs.Created, "a", "a", t0)
	clk := &clock{}
	cfg := publish.Config{BaseURL: "http://127.0.0.1:1/", Out: out, Logger: quiet, Now: clk.Now,
		Sets: []publish.Set{{Name: "default", Store: st, ResourceBase: "http://127.0.0.1:1/r/"}}}
	for _, tc := range []struct {
		now    time.Time
		closed int
	}{
		{t0.Add(30 * time.Second), 0},  // 11:00:20: within the grace
		{t0.Add(60 * time.Second), 0},  // 11:00:50
		{t0.Add(70 * time.Second), 1},  // 11:01:00: closes at 11:00
		{t0.Add(10 * time.Minute), 0},  // nothing more to close
		{t0.Add(200 * time.Minute), 0}, // an empty open list never closes
	} {
		clk.Set(tc.now)
		rep, err := publish.Publish(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Sets[0].NewlyClosed != tc.closed {
			t.Errorf("at %s: closed %d, want %d", tc.now.Format("15:04:05"), rep.Sets[0].NewlyClosed, tc.closed)
		}
	}
}

func TestConcurrentRunsOnOneOut(t *testing.T) {
	out := t.TempDir()
	st := openStore(t, "")
	base := server(t, out)
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	for i := range 50 {
		apply(t, st, "", rs.Created, fmt.Sprint("f", i), "x", t0)
	}
	cfg := publish.Config{BaseURL: base, Out: out, MaxEntries: 7, Archives: true, Logger: quiet,
		Sets: []publish.Set{{Name: "default", Store: st, ResourceBase: base + "r/"}}}
	errs := make(chan error, 4)
	for i := range 4 {
		c := cfg
		c.Now = func() time.Time { return t0.Add(time.Duration(i+1) * time.Hour) }
		go func() { _, err := publish.Publish(context.Background(), c); errs <- err }()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	mustWalkClean(t, base)
}
