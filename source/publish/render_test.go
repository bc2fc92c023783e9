package publish_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/memstore"
)

// tree returns every file under dir (relative path -> bytes).
func tree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, a, b string) {
	t.Helper()
	ta, tb := tree(t, a), tree(t, b)
	var names []string
	for n := range ta {
		names = append(names, n)
	}
	for n := range tb {
		if _, ok := ta[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		if !bytes.Equal(ta[n], tb[n]) {
			t.Errorf("%s: %s differs (leader %d bytes, replica %d bytes)", what, n, len(ta[n]), len(tb[n]))
		}
	}
	if len(ta) < 5 {
		t.Errorf("%s: only %d files", what, len(ta))
	}
}

// TestRenderIdentical: a replica that renders a followed set from the
// leader's meta writes the same bytes as the leader's Publish, through
// splits, merges, deletions, closed Change Lists and a takeover (the
// replica publishes, the former leader renders).
func TestRenderIdentical(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{7, 100} { // one document; parts
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			db := memstore.New()
			a, b := db.Open("default"), db.Open("default")
			defer a.Close()
			defer b.Close()
			t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
			var cs []store.Change
			for i := range n {
				cs = append(cs, store.Change{Kind: rs.Created, Time: t0, Resource: resource(fmt.Sprintf("p/%03d", i), []byte(fmt.Sprint(i)), t0)})
			}
			if _, _, err := a.Apply(ctx, store.Batch{Changes: cs, Baseline: true,
				Meta: map[string][]byte{store.MetaBaseline: store.FormatBaseline(t0)}}); err != nil {
				t.Fatal(err)
			}
			clk := &clock{t: t0.Add(time.Minute)}
			outA, outB := t.TempDir(), t.TempDir()
			cfg := func(out string, st store.Store, follow bool) publish.Config {
				return publish.Config{BaseURL: "http://lb.example/", Out: out, MaxEntries: 10, Replicas: true, Dumps: true, Archives: true,
					ChangeListPeriod: time.Hour, Now: clk.Now, Logger: quiet,
					Sets: []publish.Set{{Name: "default", Store: st, ResourceBase: "http://lb.example/", Follow: follow}}}
			}
			run := func(c publish.Config) publish.SetReport {
				t.Helper()
				rep, err := publish.Publish(ctx, c)
				if err != nil {
					t.Fatal(err)
				}
				return rep.Sets[0]
			}
			// Before the leader's first Publish, the replica is behind.
			if sr := run(cfg(outB, b, true)); !sr.Behind {
				t.Errorf("render of an unpublished set: %+v, want Behind", sr)
			}
			leader, follower := a, b
			lout, fout := outA, outB
			step := 0
			change := func(k int) {
				step++
				tm := t0.Add(time.Duration(step) * 20 * time.Minute)
				clk.Set(tm)
				var cs []store.Change
				for i := range k {
					p := fmt.Sprintf("p/%03d", (step*37+i*13)%(n+20))
					_, err := leader.Get(ctx, p)
					kind := rs.Created
					if err == nil {
						kind = rs.Updated
						if i%3 == 0 {
							kind = rs.Deleted
						}
					}
					if slices.ContainsFunc(cs, func(c store.Change) bool { return c.Path() == p }) {
						continue
					}
					cs = append(cs, store.Change{Kind: kind, Time: tm, Resource: resource(p, []byte(fmt.Sprint(step, i)), tm)})
				}
				if _, _, err := leader.Apply(ctx, store.Batch{Changes: cs}); err != nil {
					t.Fatal(err)
				}
			}
			for round := range 8 {
				if round > 0 {
					change(1 + round%4*3)
				}
				if round == 4 {
					// The replica lags: the inventory moves on after the
					// leader's Publish; the render must not write a list
					// the leader never published.
					run(cfg(lout, leader, false))
					step++
					tm := t0.Add(time.Duration(step) * 20 * time.Minute)
					var cs []store.Change
					for r, err := range leader.Resources(ctx) {
						if err != nil {
							t.Fatal(err)
						}
						cs = append(cs, store.Change{Kind: rs.Updated, Time: tm, Resource: resource(r.Path, []byte("all"), tm)})
					}
					if _, _, err := leader.Apply(ctx, store.Batch{Changes: cs}); err != nil {
						t.Fatal(err)
					}
					before := tree(t, fout)
					if sr := run(cfg(fout, follower, true)); !sr.Behind {
						t.Errorf("render after the inventory moved: %+v, want Behind", sr)
					}
					after := tree(t, fout)
					rl := ".resourcesync/default/resourcelist.xml"
					if !bytes.Equal(before[rl], after[rl]) {
						t.Errorf("a behind render changed resourcelist.xml")
					}
				}
				if round == 6 {
					// Takeover.
					leader, follower = follower, leader
					lout, fout = fout, lout
				}
				if round == 5 {
					// The leader closes a list (its period ends) and the
					// follower does not render before it takes over: its
					// open-form file must be rewritten closed when it
					// publishes as the new leader.
					step += 6
					clk.Set(t0.Add(time.Duration(step) * 20 * time.Minute))
					if sr := run(cfg(lout, leader, false)); sr.NewlyClosed == 0 {
						t.Fatalf("round 5 closed no list: %+v", sr)
					}
					continue
				}
				run(cfg(lout, leader, false))
				run(cfg(fout, follower, true))
				sameTree(t, fmt.Sprintf("round %d", round), lout, fout)
				// Nothing new: a second render touches no file.
				sd := filepath.Join(fout, ".well-known/resourcesync")
				before, _ := os.Stat(sd)
				run(cfg(fout, follower, true))
				if after, _ := os.Stat(sd); !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
					t.Errorf("round %d: a render with nothing new rewrote the Source Description", round)
				}
			}
			if n == 100 {
				if ents, _ := os.ReadDir(filepath.Join(outA, ".resourcesync/default/resourcelists/parts")); len(ents) < 5 {
					t.Errorf("%d parts, want a split list", len(ents))
				}
			}
			if ents, _ := os.ReadDir(filepath.Join(outA, ".resourcesync/default/changelists")); len(ents) < 3 {
				t.Errorf("%d Change Lists, want closed lists", len(ents))
			}
			for _, out := range []string{outA, outB} {
				for rel := range tree(t, out) {
					if filepath.Ext(rel) == ".xml" {
						decodeFile(t, filepath.Join(out, rel)) // validates
					}
					if filepath.Ext(rel) == ".zip" || bytes.Contains([]byte(rel), []byte("archive")) {
						t.Errorf("%s: dumps and archives are off with Replicas", rel)
					}
				}
			}
		})
	}
}

// hookStore calls hook (once) on the first read (GetMeta, Journal) after a
// PutMeta of key.
type hookStore struct {
	store.Store
	key   string
	armed bool
	hook  func()
}

func (h *hookStore) fire() {
	if h.armed {
		h.armed = false
		hook := h.hook
		h.hook = nil
		hook()
	}
}

func (h *hookStore) PutMeta(ctx context.Context, key string, v []byte) error {
	err := h.Store.PutMeta(ctx, key, v)
	if err == nil && key == h.key && h.hook != nil {
		h.armed = true
	}
	return err
}

func (h *hookStore) GetMeta(ctx context.Context, key string) ([]byte, error) {
	h.fire()
	return h.Store.GetMeta(ctx, key)
}

func (h *hookStore) Journal(ctx context.Context, from uint64) iter.Seq2[store.Change, error] {
	h.fire()
	return h.Store.Journal(ctx, from)
}

// TestRenderAfterTakeoverMidPublish: a leader whose role passes to
// another replica while it publishes (it has recorded its Change List
// boundaries and written its files; the new leader then journals and
// publishes before the former one is done) holds the documents of its own
// meta, not of the new leader's. Its next render must bring them to what
// the meta now describes; it used to take the new meta for what its tree
// held (read back after the writes) and never rewrote its open Change
// List: two replicas serving different bytes until the next commit.
func TestRenderAfterTakeoverMidPublish(t *testing.T) {
	ctx := context.Background()
	db := memstore.New()
	a, c := db.Open("default"), db.Open("default")
	defer a.Close()
	defer c.Close()
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	if _, _, err := a.Apply(ctx, store.Batch{Baseline: true,
		Changes: []store.Change{{Kind: rs.Created, Time: t0, Resource: resource("x", []byte("x"), t0)}},
		Meta:    map[string][]byte{store.MetaBaseline: store.FormatBaseline(t0)}}); err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: t0.Add(time.Minute)}
	outA, outC := t.TempDir(), t.TempDir()
	cfg := func(out string, st store.Store, follow bool) publish.Config {
		return publish.Config{BaseURL: "http://lb.example/", Out: out, Replicas: true,
			ChangeListPeriod: time.Hour, Now: clk.Now, Logger: quiet,
			Sets: []publish.Set{{Name: "default", Store: st, ResourceBase: "http://lb.example/", Follow: follow}}}
	}
	run := func(c publish.Config) {
		t.Helper()
		if _, err := publish.Publish(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	change := func(p string, k rs.Change) {
		t.Helper()
		tm := clk.Now()
		if _, _, err := a.Apply(ctx, store.Batch{Changes: []store.Change{{Kind: k, Time: tm, Resource: resource(p, []byte(p+tm.String()), tm)}}}); err != nil {
			t.Fatal(err)
		}
	}
	// C leads first; A follows.
	run(cfg(outC, c, false))
	run(cfg(outA, a, true))
	sameTree(t, "before", outA, outC)

	// C journals and publishes; once it has recorded the Change Lists'
	// meta, A takes over, journals more and publishes.
	clk.Set(t0.Add(2 * time.Minute))
	change("y", rs.Created)
	hc := &hookStore{Store: c, key: "publish.changelists", hook: func() {
		clk.Set(t0.Add(3 * time.Minute))
		change("z", rs.Created)
		change("x", rs.Updated)
		run(cfg(outA, a, false))
	}}
	run(cfg(outC, hc, false))
	if hc.hook != nil {
		t.Fatal("the takeover did not happen during the publish")
	}
	// C follows now: a render makes its tree what the meta describes.
	run(cfg(outC, c, true))
	sameTree(t, "after the takeover", outA, outC)
}
