// Package storetest is the contract test suite for store.Store. Every
// implementation runs it from its own tests:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { ... a new, empty store ... })
//	}
//
// open must return a new empty Store for each call; the suite closes it.
package storetest

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// T0 is the base datetime of the suite's changes.
var T0 = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)

// Res returns a resource for path whose content metadata derive from
// content.
func Res(path, content string) store.Resource {
	return store.Resource{
		Path:    path,
		Size:    int64(len(content)),
		ModTime: T0.Add(-time.Hour),
		Inode:   uint64(len(path)) + 1000,
		MD5:     md5.Sum([]byte(content)),
		SHA256:  sha256.Sum256([]byte(content)),
		Type:    "text/plain; charset=utf-8",
		LastMod: T0.Add(-time.Hour),
	}
}

// Equal reports whether two resources are equal, times compared as
// instants.
func Equal(a, b store.Resource) bool {
	return a.Path == b.Path && a.Size == b.Size && a.ModTime.Equal(b.ModTime) && a.Inode == b.Inode &&
		a.MD5 == b.MD5 && a.SHA256 == b.SHA256 && a.Type == b.Type &&
		a.LastMod.Equal(b.LastMod) && a.Changed.Equal(b.Changed)
}

func ch(kind rs.Change, t time.Time, r store.Resource) store.Change {
	return store.Change{Kind: kind, Time: t, Resource: r}
}

// Run runs the contract suite against stores made by open.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	newStore := func(t *testing.T) store.Store {
		s := open(t)
		t.Cleanup(func() { s.Close() })
		return s
	}
	apply := func(t *testing.T, s store.Store, b store.Batch) (uint64, uint64) {
		t.Helper()
		f, l, err := s.Apply(ctx, b)
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		return f, l
	}

	t.Run("Empty", func(t *testing.T) {
		s := newStore(t)
		st, err := s.Stats(ctx)
		if err != nil || st != (store.Stats{}) {
			t.Errorf("Stats = %+v, %v; want zero", st, err)
		}
		if _, err := s.Get(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get: %v, want ErrNotFound", err)
		}
		if _, err := s.GetMeta(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetMeta: %v, want ErrNotFound", err)
		}
		if got := collectRes(t, s); len(got) != 0 {
			t.Errorf("Resources: %d records", len(got))
		}
		if got := collectJnl(t, s.Journal(ctx, 0)); len(got) != 0 {
			t.Errorf("Journal: %d records", len(got))
		}
		if got := collectJnl(t, s.JournalBetween(ctx, time.Time{}, time.Time{})); len(got) != 0 {
			t.Errorf("JournalBetween: %d records", len(got))
		}
		if f, l := apply(t, s, store.Batch{}); f != 0 || l != 0 {
			t.Errorf("empty Apply = %d, %d", f, l)
		}
	})

	t.Run("ApplyAndReplay", func(t *testing.T) {
		s := newStore(t)
		weird := "dir/na\xffme with space%#?é"
		a, b := Res("a", "A"), Res(weird, "W")
		b.ModTime, b.LastMod = time.Time{}, time.Time{} // zero times survive
		f, l := apply(t, s, store.Batch{Changes: []store.Change{
			ch(rs.Created, T0, a), ch(rs.Created, T0, b),
		}})
		if f != 1 || l != 2 {
			t.Fatalf("seqs %d..%d, want 1..2", f, l)
		}
		a2 := Res("a", "A2")
		f, l = apply(t, s, store.Batch{Changes: []store.Change{
			ch(rs.Updated, T0.Add(time.Second), a2), ch(rs.Deleted, T0.Add(2*time.Second), b),
		}})
		if f != 3 || l != 4 {
			t.Fatalf("seqs %d..%d, want 3..4", f, l)
		}
		got, err := s.Get(ctx, "a")
		a2.Changed = T0.Add(time.Second)
		if err != nil || !Equal(got, a2) {
			t.Errorf("Get(a) = %+v, %v; want %+v", got, err, a2)
		}
		if _, err := s.Get(ctx, weird); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(deleted) = %v, want ErrNotFound", err)
		}
		j := collectJnl(t, s.Journal(ctx, 0))
		if len(j) != 4 {
			t.Fatalf("journal has %d records, want 4", len(j))
		}
		wantKinds := []rs.Change{rs.Created, rs.Created, rs.Updated, rs.Deleted}
		for i, c := range j {
			if c.Seq != uint64(i+1) || c.Kind != wantKinds[i] {
				t.Errorf("record %d: seq %d kind %s", i, c.Seq, c.Kind)
			}
		}
		if j[1].Path() != weird || !Equal(j[1].Resource, withChanged(b, T0)) {
			t.Errorf("record 2 = %+v, want %+v", j[1].Resource, b)
		}
		if !j[0].Time.Equal(T0) || j[0].Time.Nanosecond() != T0.Nanosecond() {
			t.Errorf("time %v, want %v (nanoseconds kept)", j[0].Time, T0)
		}
		st, _ := s.Stats(ctx)
		if st.Resources != 1 || st.FirstSeq != 1 || st.LastSeq != 4 || !st.LastTime.Equal(T0.Add(2*time.Second)) {
			t.Errorf("Stats = %+v", st)
		}
		checkReplay(t, s)
	})

	t.Run("Conflicts", func(t *testing.T) {
		s := newStore(t)
		apply(t, s, store.Batch{Changes: []store.Change{ch(rs.Created, T0, Res("a", "A"))}})
		for _, tc := range []struct {
			name string
			b    store.Batch
		}{
			{"create existing", store.Batch{Changes: []store.Change{ch(rs.Created, T0, Res("b", "B")), ch(rs.Created, T0, Res("a", "A"))}}},
			{"update missing", store.Batch{Changes: []store.Change{ch(rs.Created, T0, Res("b", "B")), ch(rs.Updated, T0, Res("c", "C"))}}},
			{"delete missing", store.Batch{Changes: []store.Change{ch(rs.Created, T0, Res("b", "B")), ch(rs.Deleted, T0, Res("c", ""))}}},
			{"delete twice", store.Batch{Changes: []store.Change{ch(rs.Deleted, T0, Res("a", "")), ch(rs.Deleted, T0, Res("a", ""))}}},
			{"bad kind", store.Batch{Changes: []store.Change{ch(rs.Created, T0, Res("b", "B")), ch("moved", T0, Res("a", ""))}}},
			{"empty path", store.Batch{Changes: []store.Change{ch(rs.Created, T0, Res("", "B"))}}},
			{"touch missing", store.Batch{Changes: []store.Change{ch(rs.Created, T0, Res("b", "B"))}, Touch: []store.Resource{Res("c", "C")}}},
		} {
			b := tc.b
			b.Meta = map[string][]byte{"m": []byte("x")}
			if _, _, err := s.Apply(ctx, b); !errors.Is(err, store.ErrConflict) {
				t.Errorf("%s: %v, want ErrConflict", tc.name, err)
			}
		}
		st, _ := s.Stats(ctx)
		if st.Resources != 1 || st.LastSeq != 1 {
			t.Errorf("after rejected batches Stats = %+v, want 1 resource, seq 1", st)
		}
		if _, err := s.GetMeta(ctx, "m"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("meta of a rejected batch is visible: %v", err)
		}
		if _, err := s.Get(ctx, "b"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("resource of a rejected batch is visible: %v", err)
		}
		// A create after a delete in the same batch is fine (a rename back).
		apply(t, s, store.Batch{Changes: []store.Change{ch(rs.Deleted, T0, Res("a", "A")), ch(rs.Created, T0, Res("a", "A"))}})
		checkReplay(t, s)
	})

	t.Run("TimeOrder", func(t *testing.T) {
		s := newStore(t)
		apply(t, s, store.Batch{Changes: []store.Change{ch(rs.Created, T0, Res("a", "A"))}})
		if _, _, err := s.Apply(ctx, store.Batch{Changes: []store.Change{ch(rs.Created, T0.Add(-time.Nanosecond), Res("b", "B"))}}); !errors.Is(err, store.ErrTimeOrder) {
			t.Errorf("earlier than journal: %v, want ErrTimeOrder", err)
		}
		if _, _, err := s.Apply(ctx, store.Batch{Changes: []store.Change{
			ch(rs.Created, T0.Add(time.Second), Res("b", "B")), ch(rs.Created, T0, Res("c", "C")),
		}}); !errors.Is(err, store.ErrTimeOrder) {
			t.Errorf("decreasing in batch: %v, want ErrTimeOrder", err)
		}
		// Equal datetimes are fine.
		apply(t, s, store.Batch{Changes: []store.Change{ch(rs.Created, T0, Res("b", "B"))}})
		if st, _ := s.Stats(ctx); st.LastSeq != 2 {
			t.Errorf("LastSeq = %d, want 2", st.LastSeq)
		}
	})

	t.Run("Touch", func(t *testing.T) {
		s := newStore(t)
		apply(t, s, store.Batch{Changes: []store.Change{ch(rs.Created, T0, Res("a", "A"))}})
		r, _ := s.Get(ctx, "a")
		r.ModTime = r.ModTime.Add(time.Minute)
		r.Inode = 42
		apply(t, s, store.Batch{Touch: []store.Resource{r}})
		got, _ := s.Get(ctx, "a")
		if !Equal(got, r) {
			t.Errorf("after touch %+v, want %+v", got, r)
		}
		if st, _ := s.Stats(ctx); st.LastSeq != 1 || st.Resources != 1 {
			t.Errorf("touch journaled: %+v", st)
		}
	})

	t.Run("Baseline", func(t *testing.T) {
		s := newStore(t)
		f, l := apply(t, s, store.Batch{Baseline: true, Changes: []store.Change{
			ch(rs.Created, T0, Res("a", "A")), ch(rs.Created, T0, Res("b", "B")), ch(rs.Created, T0, Res("c", "C"))}})
		if f != 0 || l != 0 {
			t.Errorf("baseline returned seqs %d, %d", f, l)
		}
		apply(t, s, store.Batch{Baseline: true, Changes: []store.Change{ch(rs.Deleted, T0, Res("c", "C")), ch(rs.Updated, T0, Res("b", "B2"))},
			Meta: map[string][]byte{store.MetaBaseline: store.FormatBaseline(T0)}})
		if st, _ := s.Stats(ctx); st.LastSeq != 0 || st.Resources != 2 {
			t.Errorf("after baseline: %+v, want no journal and 2 resources", st)
		}
		if got, _ := s.Get(ctx, "b"); got.SHA256 != Res("b", "B2").SHA256 || !got.Changed.Equal(T0) {
			t.Errorf("baseline update: %+v", got)
		}
		if bt, ok, err := store.BaselineTime(ctx, s); err != nil || !ok || !bt.Equal(T0) {
			t.Errorf("BaselineTime = %v, %v, %v", bt, ok, err)
		}
		apply(t, s, store.Batch{Changes: []store.Change{ch(rs.Created, T0.Add(time.Second), Res("d", "D"))}})
		if _, _, err := s.Apply(ctx, store.Batch{Baseline: true, Changes: []store.Change{ch(rs.Created, T0.Add(time.Second), Res("e", "E"))}}); !errors.Is(err, store.ErrConflict) {
			t.Errorf("baseline after journal records: %v, want ErrConflict", err)
		}
		if _, err := s.Get(ctx, "e"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("refused baseline batch applied: %v", err)
		}
		if st, _ := s.Stats(ctx); st.LastSeq != 1 || st.Resources != 3 {
			t.Errorf("after a change: %+v", st)
		}
	})

	t.Run("Meta", func(t *testing.T) {
		s := newStore(t)
		if err := s.PutMeta(ctx, "k", []byte("v1")); err != nil {
			t.Fatal(err)
		}
		v, err := s.GetMeta(ctx, "k")
		if err != nil || string(v) != "v1" {
			t.Errorf("GetMeta = %q, %v", v, err)
		}
		v[0] = 'X' // the caller may modify it
		apply(t, s, store.Batch{Changes: []store.Change{ch(rs.Created, T0, Res("a", "A"))}, Meta: map[string][]byte{"k": []byte("v2"), "k2": {}}})
		if v, _ := s.GetMeta(ctx, "k"); string(v) != "v2" {
			t.Errorf("meta in batch = %q", v)
		}
		if v, err := s.GetMeta(ctx, "k2"); err != nil || len(v) != 0 {
			t.Errorf("empty meta value = %q, %v", v, err)
		}
		if err := s.PutMeta(ctx, "k", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetMeta(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted meta: %v", err)
		}
	})

	t.Run("ResourcesOrder", func(t *testing.T) {
		s := newStore(t)
		paths := []string{"b", "a/b", "a", "\xff\xfe", "é", "a b", "a%20b", "Z", "a/\x80"}
		var cs []store.Change
		for _, p := range paths {
			cs = append(cs, ch(rs.Created, T0, Res(p, p)))
		}
		apply(t, s, store.Batch{Changes: cs})
		got := collectRes(t, s)
		var gotPaths []string
		for _, r := range got {
			gotPaths = append(gotPaths, r.Path)
		}
		want := slices.Clone(paths)
		slices.Sort(want) // Go string order is byte order
		if !slices.Equal(gotPaths, want) {
			t.Errorf("Resources order %q, want %q", gotPaths, want)
		}
		n := 0
		for range s.Resources(ctx) {
			if n++; n == 3 {
				break
			}
		}
		if n != 3 {
			t.Errorf("break after 3: %d", n)
		}
	})

	t.Run("ResourcesIn", func(t *testing.T) {
		s := newStore(t)
		var paths []string
		for i := range 5000 { // several pages of any sane page size
			paths = append(paths, fmt.Sprintf("d%d/f%05d", i%7, i))
		}
		paths = append(paths, "\xff\xfe", "a", "a/b", "a b")
		var cs []store.Change
		for _, p := range paths {
			cs = append(cs, ch(rs.Created, T0, Res(p, p)))
		}
		apply(t, s, store.Batch{Changes: cs})
		slices.Sort(paths)
		in := func(from, to string) []string {
			var out []string
			for r, err := range s.ResourcesIn(ctx, from, to) {
				if err != nil {
					t.Fatalf("ResourcesIn(%q, %q): %v", from, to, err)
				}
				if r.MD5 != Res(r.Path, r.Path).MD5 {
					t.Fatalf("ResourcesIn(%q, %q): record %q has other content", from, to, r.Path)
				}
				out = append(out, r.Path)
			}
			return out
		}
		want := func(from, to string) []string {
			var out []string
			for _, p := range paths {
				if p >= from && (to == "" || p < to) {
					out = append(out, p)
				}
			}
			return out
		}
		for _, r := range [][2]string{{"", ""}, {"d3/", "d3/\xff"}, {"d2/f00100", "d5"}, {"a", "a/b"}, {"zz", ""}, {"d1/", "d1/"}, {"\xff", ""}} {
			if got, w := in(r[0], r[1]), want(r[0], r[1]); !slices.Equal(got, w) {
				t.Errorf("ResourcesIn(%q, %q): %d paths, want %d (first diff around %v)", r[0], r[1], len(got), len(w), firstDiff(got, w))
			}
		}
		// The loop body may Apply: delete every path as it is yielded.
		n := 0
		for r, err := range s.ResourcesIn(ctx, "d4/", "d4/\xff") {
			if err != nil {
				t.Fatal(err)
			}
			n++
			apply(t, s, store.Batch{Changes: []store.Change{ch(rs.Deleted, T0, r)}})
		}
		if w := len(want("d4/", "d4/\xff")); n != w {
			t.Errorf("deleting while iterating: %d yielded, want %d", n, w)
		}
		if got := in("d4/", "d4/\xff"); len(got) != 0 {
			t.Errorf("after deleting d4/: %d left", len(got))
		}
		k := 0
		for range s.ResourcesIn(ctx, "", "") {
			if k++; k == 3 {
				break
			}
		}
		if k != 3 {
			t.Errorf("break after 3: %d", k)
		}
	})

	t.Run("JournalRanges", func(t *testing.T) {
		s := newStore(t)
		// 3000 records (more than any reasonable read chunk), 10 per second.
		const n = 3000
		for i := 0; i < n; i += 500 {
			var cs []store.Change
			for k := i; k < i+500; k++ {
				cs = append(cs, ch(rs.Created, T0.Add(time.Duration(k/10)*time.Second), Res(fmt.Sprintf("f%05d", k), "x")))
			}
			apply(t, s, store.Batch{Changes: cs})
		}
		all := collectJnl(t, s.Journal(ctx, 0))
		if len(all) != n {
			t.Fatalf("Journal(0): %d records", len(all))
		}
		for i, c := range all {
			if c.Seq != uint64(i+1) || c.Path() != fmt.Sprintf("f%05d", i) {
				t.Fatalf("record %d: seq %d path %q", i, c.Seq, c.Path())
			}
		}
		if got := collectJnl(t, s.Journal(ctx, 1234)); len(got) != n-1233 || got[0].Seq != 1234 {
			t.Errorf("Journal(1234): %d records from %d", len(got), got[0].Seq)
		}
		if got := collectJnl(t, s.Journal(ctx, n+1)); len(got) != 0 {
			t.Errorf("Journal(past end): %d", len(got))
		}
		for _, tc := range []struct {
			from, until time.Time
			first, num  int // first seq, count
		}{
			{time.Time{}, time.Time{}, 1, n},
			{T0, T0.Add(time.Second), 1, 10},
			{T0.Add(100 * time.Second), T0.Add(150 * time.Second), 1001, 500},
			{T0.Add(100*time.Second + 1), T0.Add(150 * time.Second), 1011, 490},
			{T0.Add(299 * time.Second), time.Time{}, 2991, 10},
			{T0.Add(300 * time.Second), time.Time{}, 0, 0},
			{T0.Add(-time.Hour), T0, 0, 0},
			{T0.Add(5 * time.Second), T0.Add(5 * time.Second), 0, 0},
		} {
			got := collectJnl(t, s.JournalBetween(ctx, tc.from, tc.until))
			if len(got) != tc.num || (tc.num > 0 && got[0].Seq != uint64(tc.first)) {
				first := uint64(0)
				if len(got) > 0 {
					first = got[0].Seq
				}
				t.Errorf("JournalBetween(%v, %v): %d records from seq %d; want %d from %d", tc.from, tc.until, len(got), first, tc.num, tc.first)
			}
		}
		// The loop body may call Apply.
		k := 0
		for c, err := range s.Journal(ctx, 0) {
			if err != nil {
				t.Fatal(err)
			}
			if k++; k%1000 == 0 {
				apply(t, s, store.Batch{Changes: []store.Change{ch(rs.Updated, T0.Add(time.Hour), Res(c.Path(), "y"))}})
			}
		}
		if k < n {
			t.Errorf("iteration with Apply saw %d records", k)
		}
	})

	t.Run("ConcurrentApply", func(t *testing.T) {
		s := newStore(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var last time.Time // keeps datetimes non-decreasing across writers
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 25 {
					mu.Lock()
					last = last.Add(time.Millisecond)
					if last.Before(T0) {
						last = T0
					}
					_, _, err := s.Apply(ctx, store.Batch{Changes: []store.Change{ch(rs.Created, last, Res(fmt.Sprintf("g%d/%d", g, i), "x"))}})
					mu.Unlock()
					if err != nil {
						t.Error(err)
					}
					if _, err := s.Stats(ctx); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		st, _ := s.Stats(ctx)
		if st.Resources != 100 || st.LastSeq != 100 {
			t.Errorf("Stats %+v, want 100 resources and seq 100", st)
		}
		checkReplay(t, s)
	})

	t.Run("Canceled", func(t *testing.T) {
		s := newStore(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err := s.Apply(cctx, store.Batch{Changes: []store.Change{ch(rs.Created, T0, Res("a", "A"))}}); !errors.Is(err, context.Canceled) {
			t.Errorf("Apply: %v", err)
		}
		for _, err := range s.Journal(cctx, 0) {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Journal: %v", err)
			}
		}
		if st, _ := s.Stats(ctx); st.LastSeq != 0 {
			t.Errorf("canceled Apply wrote: %+v", st)
		}
	})

	t.Run("Model", func(t *testing.T) { RunModel(t, open, nil) })

	t.Run("Close", func(t *testing.T) {
		s := open(t)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if _, _, err := s.Apply(ctx, store.Batch{Changes: []store.Change{ch(rs.Created, T0, Res("a", "A"))}}); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Apply after Close: %v", err)
		}
		if _, err := s.Get(ctx, "a"); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Get after Close: %v", err)
		}
		for _, err := range s.Resources(ctx) {
			if !errors.Is(err, store.ErrClosed) {
				t.Errorf("Resources after Close: %v", err)
			}
		}
	})
}

func withChanged(r store.Resource, t time.Time) store.Resource { r.Changed = t; return r }

func collectRes(t *testing.T, s store.Store) []store.Resource {
	t.Helper()
	var out []store.Resource
	for r, err := range s.Resources(context.Background()) {
		if err != nil {
			t.Fatalf("Resources: %v", err)
		}
		out = append(out, r)
	}
	return out
}

func collectJnl(t *testing.T, seq func(func(store.Change, error) bool)) []store.Change {
	t.Helper()
	var out []store.Change
	for c, err := range seq {
		if err != nil {
			t.Fatalf("journal: %v", err)
		}
		out = append(out, c)
	}
	return out
}

func checkReplay(t *testing.T, s store.Store) {
	t.Helper()
	if err := CheckReplay(context.Background(), s); err != nil {
		t.Error(err)
	}
}

// CheckReplay verifies the store's central invariant: the journal has
// contiguous seqs and non-decreasing datetimes, every record fits the state
// replayed so far (created only for absent paths, updated and deleted only
// for present ones), and the replay equals the inventory in content
// metadata (size, hashes, type, lastmod, changed). With a baseline
// (store.MetaBaseline), the replay starts from it: a path's first record
// may update or delete a baseline resource, and inventory records the
// journal never names must be from the baseline (changed at or before it).
// A state with neither journal nor baseline record is a first scan in
// progress: any inventory passes.
func CheckReplay(ctx context.Context, s store.Store) error {
	bt, hasBaseline, err := store.BaselineTime(ctx, s)
	if err != nil {
		return err
	}
	replay := map[string]store.Resource{}
	// With a baseline, a path's first record may update or delete a
	// baseline resource; deleted records which paths the journal removed.
	touched := map[string]bool{}
	var prev store.Change
	for c, err := range s.Journal(ctx, 0) {
		if err != nil {
			return err
		}
		if prev.Seq != 0 && (c.Seq != prev.Seq+1 || c.Time.Before(prev.Time)) {
			return fmt.Errorf("journal seq %d at %v follows seq %d at %v", c.Seq, c.Time, prev.Seq, prev.Time)
		}
		if prev.Seq == 0 && hasBaseline && c.Time.Before(bt) {
			return fmt.Errorf("journal seq %d at %v is before the baseline at %v", c.Seq, c.Time, bt)
		}
		_, exists := replay[c.Path()]
		if hasBaseline && !touched[c.Path()] {
			exists = c.Kind != rs.Created // unknown: the baseline may have had it
		}
		touched[c.Path()] = true
		switch {
		case c.Kind == rs.Created && exists, c.Kind != rs.Created && !exists:
			return fmt.Errorf("journal seq %d: %s of %q, present before: %v", c.Seq, c.Kind, c.Path(), exists)
		}
		if c.Kind == rs.Deleted {
			delete(replay, c.Path())
		} else {
			r := c.Resource
			r.Changed = c.Time
			replay[c.Path()] = r
		}
		prev = c
	}
	n := 0
	for r, err := range s.Resources(ctx) {
		if err != nil {
			return err
		}
		n++
		j, ok := replay[r.Path]
		if !ok && !touched[r.Path] && (hasBaseline || prev.Seq == 0) {
			// A baseline resource (or, with no journal and no baseline
			// yet, part of a first scan not yet complete).
			if hasBaseline && r.Changed.After(bt) {
				return fmt.Errorf("inventory %q changed at %v, after the baseline at %v, with no journal record", r.Path, r.Changed, bt)
			}
			n--
			continue
		}
		if !ok {
			return fmt.Errorf("inventory has %q, the journal replay does not", r.Path)
		}
		if j.Size != r.Size || j.MD5 != r.MD5 || j.SHA256 != r.SHA256 || j.Type != r.Type ||
			!j.LastMod.Equal(r.LastMod) || !j.Changed.Equal(r.Changed) {
			return fmt.Errorf("inventory %q = %+v, journal replay %+v", r.Path, r, j)
		}
	}
	if n != len(replay) {
		var missing []string
		for p := range replay {
			if _, err := s.Get(ctx, p); err != nil {
				missing = append(missing, p)
			}
		}
		slices.SortFunc(missing, func(a, b string) int { return bytes.Compare([]byte(a), []byte(b)) })
		return fmt.Errorf("journal replay has %d resources, inventory %d; missing %q", len(replay), n, missing)
	}
	return nil
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("index %d: %q vs %q", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d", len(a), len(b))
}
