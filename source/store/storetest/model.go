package storetest

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// The model tests are seeded: each run logs its seed, and
// STORETEST_SEED=N (or -storetest.seed=N) replays one history.
var modelSeed = flag.Uint64("storetest.seed", 0, "seed of the model-based test (0: from STORETEST_SEED or random)")

// Seed returns the seed for a model-based test: -storetest.seed, else
// $STORETEST_SEED, else a random one. It logs the seed and how to replay it.
func Seed(t testing.TB, env string) uint64 {
	t.Helper()
	seed := *modelSeed
	if seed == 0 {
		if v := os.Getenv(env); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatalf("%s=%q: %v", env, v, err)
			}
			seed = n
		}
	}
	if seed == 0 {
		seed = rand.Uint64()>>1 + 1
	}
	t.Logf("seed %d (replay with %s=%d)", seed, env, seed)
	return seed
}

// modelPaths is the small alphabet of paths the model draws from: prefixes
// of each other, '/'-heavy, invalid UTF-8, a NUL byte, non-normalised
// Unicode, so that byte order and range bounds are exercised.
var modelPaths = []string{
	"a", "a/", "a/b", "a//b", "a/b/c", "ab", "a0", "/", "//", "/a",
	"b\xff", "b\xff/c", "\xfe\xff", "a\x00b", "é", "e\u0301", "z z%20?#",
	// Long paths sharing a 2,000-byte prefix (under pgstore's limit of
	// 2,600 bytes: store.PathLimiter).
	strings.Repeat("l/", 1000) + "a", strings.Repeat("l/", 1000) + "\xff",
}

// modelMetaKeys are the meta keys the model writes besides MetaBaseline.
var modelMetaKeys = []string{"m1", "m2", "boundary"}

// storeModel is the truth the store is compared with.
type storeModel struct {
	inv      map[string]store.Resource
	journal  []store.Change // Seq i+1 at index i
	meta     map[string][]byte
	lastTime time.Time
}

func (m *storeModel) clone() *storeModel {
	c := *m
	c.inv = maps.Clone(m.inv)
	c.journal = slices.Clone(m.journal)
	c.meta = maps.Clone(m.meta)
	return &c
}

// RunModel runs the model-based test against a store made by open. reopen,
// if not nil, closes the given store and opens the same state again
// (durable implementations): the test then reopens at random steps. It is
// also run by Run, without reopen.
func RunModel(t *testing.T, open func(t *testing.T) store.Store, reopen func(t *testing.T, s store.Store) store.Store) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(Seed(t, "STORETEST_SEED"), 0x5eed))
	steps := 300
	if testing.Short() {
		steps = 80
	}
	s := open(t)
	t.Cleanup(func() { s.Close() })
	m := &storeModel{inv: map[string]store.Resource{}, meta: map[string][]byte{}}
	now := T0 // the clock of the history; never before the journal's last datetime

	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	content := func() string { return fmt.Sprintf("c%d", rng.IntN(1000)) }
	tick := func() time.Time {
		// Equal datetimes are allowed and common (one scan): advance by 0, 1ns or up to 2s.
		switch rng.IntN(3) {
		case 0:
		case 1:
			now = now.Add(1)
		default:
			now = now.Add(time.Duration(rng.Int64N(int64(2 * time.Second))))
		}
		return now
	}

	// genChanges makes n valid changes against w (updated in place).
	genChanges := func(w *storeModel, n int, baseline bool) []store.Change {
		var cs []store.Change
		for range n {
			p := pick(modelPaths)
			at := tick()
			old, exists := w.inv[p]
			var c store.Change
			switch {
			case !exists:
				c = store.Change{Kind: rs.Created, Time: at, Resource: Res(p, content())}
			case baseline || rng.IntN(2) == 0:
				c = store.Change{Kind: rs.Updated, Time: at, Resource: Res(p, content())}
			default:
				c = store.Change{Kind: rs.Deleted, Time: at, Resource: old}
			}
			if c.Kind != rs.Deleted && rng.IntN(4) == 0 {
				c.Resource.ModTime, c.Resource.LastMod = time.Time{}, time.Time{} // zero times survive
			}
			if c.Kind != rs.Deleted && rng.IntN(3) == 0 {
				c.Resource.LastMod = at.Add(-time.Duration(rng.IntN(1000)))
				c.Resource.Inode = rng.Uint64()
			}
			applyChange(w, c, baseline)
			cs = append(cs, c)
		}
		return cs
	}

	// Near the end, a bulk of resources (more than any page of the
	// implementations: 1024) is created, lives a few steps, and is deleted,
	// so that pages of Resources, ResourcesIn and Journal end at paths and
	// records the history chose.
	bulkAt := steps - 10 + rng.IntN(4)
	bulkDel := bulkAt + 2 + rng.IntN(4)
	var bulk []string
	for i := range 1100 + rng.IntN(100) {
		if i%3 == 0 {
			bulk = append(bulk, fmt.Sprintf("b\xff/%04d", i))
		} else {
			bulk = append(bulk, fmt.Sprintf("a/b/%04d\x00", i))
		}
	}

	reopens := 0
	for step := range steps {
		var desc string
		r := rng.IntN(100)
		if step == bulkAt || step == bulkDel {
			r = -1
		}
		switch {
		case r < 0:
			desc = "bulk create"
			w := m.clone()
			var b store.Batch
			for _, p := range bulk {
				c := store.Change{Kind: rs.Created, Time: tick(), Resource: Res(p, p)}
				if step == bulkDel {
					desc, c.Kind, c.Resource = "bulk delete", rs.Deleted, w.inv[p]
				}
				applyChange(w, c, false)
				b.Changes = append(b.Changes, c)
			}
			first, last, err := s.Apply(ctx, b)
			if err != nil || first != uint64(len(m.journal)+1) || last != uint64(len(w.journal)) {
				t.Fatalf("step %d: %s: Apply = %d, %d, %v", step, desc, first, last, err)
			}
			m = w
		case reopen != nil && r < 5:
			desc = "reopen"
			s = reopen(t, s)
			reopens++
		case r < 10:
			desc = "PutMeta"
			k := pick(modelMetaKeys)
			var v []byte
			if rng.IntN(3) > 0 {
				v = []byte(content())
				if rng.IntN(5) == 0 {
					v = []byte{}
				}
			}
			if err := s.PutMeta(ctx, k, v); err != nil {
				t.Fatalf("step %d: PutMeta(%q, %q): %v", step, k, v, err)
			}
			setMeta(m.meta, k, v)
		default:
			// A batch: valid, or with one deliberate fault that must reject it whole.
			w := m.clone()
			baseline := len(m.journal) == 0 && (step < 3 || rng.IntN(10) == 0)
			var b store.Batch
			b.Baseline = baseline
			b.Changes = genChanges(w, rng.IntN(5), baseline)
			if !baseline && rng.IntN(3) == 0 {
				// Touches: stat-only updates of existing records.
				for _, p := range slices.Sorted(maps.Keys(w.inv)) {
					if rng.IntN(4) == 0 {
						tr := w.inv[p]
						tr.ModTime = now.Add(time.Duration(rng.IntN(100)))
						tr.Inode = rng.Uint64()
						b.Touch = append(b.Touch, tr)
						w.inv[p] = tr
					}
				}
			}
			if rng.IntN(3) == 0 {
				b.Meta = map[string][]byte{}
				for range 1 + rng.IntN(2) {
					k := pick(modelMetaKeys)
					var v []byte
					if rng.IntN(3) > 0 {
						v = []byte(content())
					}
					b.Meta[k] = v
				}
			}
			if baseline {
				if b.Meta == nil {
					b.Meta = map[string][]byte{}
				}
				b.Meta[store.MetaBaseline] = store.FormatBaseline(now)
			}
			for k, v := range b.Meta {
				setMeta(w.meta, k, v)
			}
			var want error
			if rng.IntN(5) == 0 {
				want, desc = fault(rng, m, w, &b, now)
			}
			desc = fmt.Sprintf("%s batch of %d changes, %d touches, %d meta, baseline %v",
				desc, len(b.Changes), len(b.Touch), len(b.Meta), b.Baseline)
			first, last, err := s.Apply(ctx, b)
			switch {
			case want != nil:
				if !errors.Is(err, want) {
					t.Fatalf("step %d: %s: Apply = %d, %d, %v; want %v", step, desc, first, last, err, want)
				}
			case err != nil:
				t.Fatalf("step %d: %s: Apply: %v", step, desc, err)
			default:
				var wf, wl uint64
				if !b.Baseline && len(b.Changes) > 0 {
					wf, wl = uint64(len(m.journal)+1), uint64(len(w.journal))
				}
				if first != wf || last != wl {
					t.Fatalf("step %d: %s: Apply = %d, %d; want %d, %d", step, desc, first, last, wf, wl)
				}
				m = w
			}
		}
		if err := compareModel(ctx, rng, s, m); err != nil {
			t.Fatalf("step %d (%s): %v", step, desc, err)
		}
	}
	t.Logf("%d steps, %d reopens: %d resources, %d journal records", steps, reopens, len(m.inv), len(m.journal))
	if err := CheckReplay(ctx, s); err != nil {
		t.Error(err)
	}
}

func setMeta(meta map[string][]byte, k string, v []byte) {
	if v == nil {
		delete(meta, k)
	} else {
		meta[k] = bytes.Clone(v)
	}
}

// applyChange applies c to the model.
func applyChange(w *storeModel, c store.Change, baseline bool) {
	if c.Kind == rs.Deleted {
		delete(w.inv, c.Path())
	} else {
		r := c.Resource
		r.Changed = c.Time
		w.inv[c.Path()] = r
	}
	if !baseline {
		c.Seq = uint64(len(w.journal) + 1)
		w.journal = append(w.journal, c)
		w.lastTime = c.Time
	}
}

// fault spoils b with one fault and returns the error Apply must return.
func fault(rng *rand.Rand, m, w *storeModel, b *store.Batch, now time.Time) (error, string) {
	absent := func(inv map[string]store.Resource) (string, bool) {
		for _, p := range modelPaths {
			if _, ok := inv[p]; !ok {
				return p, true
			}
		}
		return "", false
	}
	present := func(inv map[string]store.Resource) (string, bool) {
		ps := slices.Sorted(maps.Keys(inv))
		if len(ps) == 0 {
			return "", false
		}
		return ps[rng.IntN(len(ps))], true
	}
	// The fault goes at the end: w is the state before it.
	at := now
	for range 10 {
		switch rng.IntN(7) {
		case 0:
			if p, ok := present(w.inv); ok {
				b.Changes = append(b.Changes, store.Change{Kind: rs.Created, Time: at, Resource: Res(p, "dup")})
				return store.ErrConflict, "created-exists"
			}
		case 1:
			if p, ok := absent(w.inv); ok {
				b.Changes = append(b.Changes, store.Change{Kind: rs.Updated, Time: at, Resource: Res(p, "x")})
				return store.ErrConflict, "updated-absent"
			}
		case 2:
			if p, ok := absent(w.inv); ok {
				b.Changes = append(b.Changes, store.Change{Kind: rs.Deleted, Time: at, Resource: Res(p, "x")})
				return store.ErrConflict, "deleted-absent"
			}
		case 3:
			if p, ok := absent(w.inv); ok {
				b.Touch = append(b.Touch, Res(p, "t"))
				return store.ErrConflict, "touch-absent"
			}
		case 4:
			b.Changes = append(b.Changes, store.Change{Kind: rs.Created, Time: at, Resource: Res("", "x")})
			return store.ErrConflict, "empty-path"
		case 5:
			// A baseline batch without changes is harmless and accepted
			// after the journal started (all implementations agree).
			if len(m.journal) > 0 && len(b.Changes) > 0 {
				b.Baseline = true
				return store.ErrConflict, "baseline-after-journal"
			}
		case 6:
			if b.Baseline {
				continue
			}
			last := w.lastTime
			if last.IsZero() {
				continue
			}
			p, ok := absent(w.inv)
			if !ok {
				continue
			}
			b.Changes = append(b.Changes, store.Change{Kind: rs.Created, Time: last.Add(-1 - time.Duration(rng.IntN(1e9))), Resource: Res(p, "x")})
			return store.ErrTimeOrder, "time-order"
		}
	}
	b.Changes = append(b.Changes, store.Change{Kind: rs.Created, Time: at, Resource: Res("", "x")})
	return store.ErrConflict, "empty-path"
}

// compareModel compares every read of s with the model, ranges and windows
// drawn with rng.
func compareModel(ctx context.Context, rng *rand.Rand, s store.Store, m *storeModel) error {
	for _, p := range modelPaths {
		got, err := s.Get(ctx, p)
		want, ok := m.inv[p]
		switch {
		case !ok && !errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("Get(%q) = %+v, %v; want ErrNotFound", p, got, err)
		case ok && (err != nil || !Equal(got, want)):
			return fmt.Errorf("Get(%q) = %+v, %v;\nwant %+v", p, got, err, want)
		case ok && got.Path != p:
			return fmt.Errorf("Get(%q).Path = %q", p, got.Path)
		}
	}
	sorted := slices.Sorted(maps.Keys(m.inv))
	if err := sameResources("Resources", s.Resources(ctx), m, sorted); err != nil {
		return err
	}
	bounds := append([]string{"", "a/b\x00", "\xff"}, modelPaths...)
	for range 3 {
		from, to := bounds[rng.IntN(len(bounds))], bounds[rng.IntN(len(bounds))]
		var want []string
		for _, p := range sorted {
			if from <= p && (to == "" || p < to) {
				want = append(want, p)
			}
		}
		if err := sameResources(fmt.Sprintf("ResourcesIn(%q, %q)", from, to), s.ResourcesIn(ctx, from, to), m, want); err != nil {
			return err
		}
	}
	n := uint64(len(m.journal))
	for _, from := range []uint64{0, 1, rng.Uint64N(n + 3), n, n + 1} {
		var want []store.Change
		if from <= n {
			want = m.journal[max(from, 1)-1:]
		}
		if err := sameJournal(fmt.Sprintf("Journal(%d)", from), s.Journal(ctx, from), want); err != nil {
			return err
		}
	}
	for range 3 {
		from, until := windowTime(rng, m), windowTime(rng, m)
		if rng.IntN(4) == 0 {
			until = time.Time{}
		}
		var want []store.Change
		for _, c := range m.journal {
			if !c.Time.Before(from) && (until.IsZero() || c.Time.Before(until)) {
				want = append(want, c)
			}
		}
		if err := sameJournal(fmt.Sprintf("JournalBetween(%v, %v)", from, until), s.JournalBetween(ctx, from, until), want); err != nil {
			return err
		}
	}
	st, err := s.Stats(ctx)
	want := store.Stats{Resources: len(m.inv)}
	if n > 0 {
		want.FirstSeq, want.LastSeq, want.LastTime = 1, n, m.lastTime
	}
	if err != nil || st.Resources != want.Resources || st.FirstSeq != want.FirstSeq || st.LastSeq != want.LastSeq || !st.LastTime.Equal(want.LastTime) {
		return fmt.Errorf("Stats = %+v, %v; want %+v", st, err, want)
	}
	for _, k := range append([]string{store.MetaBaseline}, modelMetaKeys...) {
		got, err := s.GetMeta(ctx, k)
		want, ok := m.meta[k]
		switch {
		case !ok && !errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("GetMeta(%q) = %q, %v; want ErrNotFound", k, got, err)
		case ok && (err != nil || !bytes.Equal(got, want)):
			return fmt.Errorf("GetMeta(%q) = %q, %v; want %q", k, got, err, want)
		}
	}
	return nil
}

// windowTime draws a datetime near the journal's: a record's, one
// nanosecond either side, or outside the journal.
func windowTime(rng *rand.Rand, m *storeModel) time.Time {
	if len(m.journal) == 0 || rng.IntN(6) == 0 {
		return T0.Add(time.Duration(rng.Int64N(int64(time.Minute))) - time.Second)
	}
	t := m.journal[rng.IntN(len(m.journal))].Time
	return t.Add(time.Duration(rng.IntN(3) - 1))
}

func sameResources(what string, seq func(func(store.Resource, error) bool), m *storeModel, want []string) error {
	var got []string
	for r, err := range seq {
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if w, ok := m.inv[r.Path]; !ok || !Equal(r, w) {
			return fmt.Errorf("%s yields %+v;\nmodel %+v (present %v)", what, r, w, ok)
		}
		got = append(got, r.Path)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s = %q;\nwant %q (%s)", what, got, want, firstDiff(got, want))
	}
	return nil
}

func sameJournal(what string, seq func(func(store.Change, error) bool), want []store.Change) error {
	i := 0
	for c, err := range seq {
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if i >= len(want) {
			return fmt.Errorf("%s: extra record seq %d %s %q", what, c.Seq, c.Kind, c.Path())
		}
		w := want[i]
		if c.Seq != w.Seq || c.Kind != w.Kind || !c.Time.Equal(w.Time) || !sameContent(c.Resource, w.Resource) {
			return fmt.Errorf("%s record %d = %d %s %v %+v;\nwant %d %s %v %+v", what, i, c.Seq, c.Kind, c.Time, c.Resource, w.Seq, w.Kind, w.Time, w.Resource)
		}
		i++
	}
	if i != len(want) {
		return fmt.Errorf("%s: %d records, want %d", what, i, len(want))
	}
	return nil
}

// sameContent compares what a journal record must carry: the path and the
// content metadata (the contract leaves the journal copy's filesystem
// fields and Changed to the implementation).
func sameContent(a, b store.Resource) bool {
	return a.Path == b.Path && a.Size == b.Size && a.MD5 == b.MD5 && a.SHA256 == b.SHA256 &&
		a.Type == b.Type && a.LastMod.Equal(b.LastMod)
}
