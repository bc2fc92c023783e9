package destination_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/storage"
)

// racingTarget is a storage.Target (the in-memory one) beside which
// another writer of the same bucket acts at the worst moment: just before
// one of the Destination's commits or removals of a key, it runs the
// hook registered for that key (once).
type racingTarget struct {
	storage.Target
	mu     sync.Mutex
	before map[string]func()
}

func (r *racingTarget) hook(key string) {
	r.mu.Lock()
	f := r.before[key]
	delete(r.before, key)
	r.mu.Unlock()
	if f != nil {
		f()
	}
}

func (r *racingTarget) Create(ctx context.Context, key string, opt storage.PutOptions) (storage.Writer, error) {
	w, err := r.Target.Create(ctx, key, opt)
	if err != nil {
		return nil, err
	}
	return &racingWriter{Writer: w, r: r, key: key}, nil
}

func (r *racingTarget) Remove(ctx context.Context, key, ifVersion string) error {
	r.hook(key)
	return r.Target.Remove(ctx, key, ifVersion)
}

type racingWriter struct {
	storage.Writer
	r   *racingTarget
	key string
}

func (w *racingWriter) Commit(ctx context.Context) (storage.Info, error) {
	w.r.hook(w.key)
	return w.Writer.Commit(ctx)
}

// TestSyncIntoTargetRacingWriter: another writer of the bucket puts its
// own object under a key between the Destination's look at the key and
// its write or removal there: an edit (overwrite of our version), an
// addition (a key that was free) and a deletion. Its object is never
// overwritten nor deleted, the run says so, and the next run (no race)
// still leaves it alone: the state did not take it for ours.
func TestSyncIntoTargetRacingWriter(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "edit.txt", []byte("v1"))
	writeFile(t, dir, "del.txt", []byte("to be deleted"))
	writeFile(t, dir, "keep.txt", []byte("kept"))
	ts := startSource(t, dir, nil, nil)
	st := newMem(t)
	tg := &racingTarget{Target: st.Target(""), before: map[string]func(){}}
	state := t.TempDir()
	sr := one(t, mustSync(t, ts.base, targetOpts(t, state, tg)))
	if sr.Fetched != 3 || sr.Failed != 0 {
		t.Fatalf("baseline: %+v", sr)
	}

	writeFile(t, dir, "edit.txt", []byte("v2 at the Source"))
	writeFile(t, dir, "new.txt", []byte("new at the Source"))
	os.Remove(filepath.Join(dir, "del.txt"))
	ts.update(t)
	theirs := map[string]string{
		"edit.txt": "another writer's edit",
		"new.txt":  "another writer's new object",
		"del.txt":  "another writer's object under a key we are deleting",
	}
	for k, v := range theirs {
		tg.before[k] = func() { st.Put(k, []byte(v)) }
	}
	rep, err := syncErr(ts.base, targetOpts(t, state, tg))
	if err != nil {
		t.Fatal(err)
	}
	if sr := one(t, rep); sr.Failed != 2 || sr.Kept != 1 || sr.Deleted != 0 || sr.Fetched != 0 {
		t.Errorf("racing run: %+v (want the edit and the addition failed, the deletion kept)", *sr)
	}
	check := func(when string) {
		t.Helper()
		for k, v := range theirs {
			o, _, ok := st.Get(k)
			if !ok || string(o.Data) != v {
				t.Errorf("%s: %s holds %q (present %v), want the other writer's %q", when, k, o.Data, ok, v)
			}
		}
	}
	check("racing run")
	if len(tg.before) != 0 {
		t.Errorf("hooks not reached: %v", tg.before)
	}
	rep, err = syncErr(ts.base, targetOpts(t, state, tg))
	if err != nil {
		t.Fatal(err)
	}
	if sr := one(t, rep); sr.Failed != 2 || sr.Deleted != 0 || sr.Fetched != 0 {
		t.Errorf("next run: %+v (want the edit and the addition failed, nothing deleted)", *sr)
	}
	check("next run")
}

func syncErr(source string, opt destination.Options) (*destination.Report, error) {
	return destination.Sync(context.Background(), source, opt)
}

// TestSyncIntoTargetStateBound: a state records one Target's objects; the
// same state given with another Target (a careless --state, or one bucket
// name on two endpoints) must be refused: its records would make the
// other bucket's objects of the same bytes "ours" to delete, and its
// missing objects "mirrored".
func TestSyncIntoTargetStateBound(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "f.txt", []byte("same bytes"))
	writeFile(t, dir, "g.txt", []byte("g"))
	ts := startSource(t, dir, nil, nil)
	a, b := newMem(t), newMem(t)
	state := t.TempDir()
	if sr := one(t, mustSync(t, ts.base, targetOpts(t, state, a.Target("")))); sr.Fetched != 2 {
		t.Fatalf("into A: %+v", sr)
	}
	b.Put("f.txt", []byte("same bytes")) // someone else's copy, in B
	os.Remove(filepath.Join(dir, "f.txt"))
	ts.update(t)
	rep, err := syncErr(ts.base, targetOpts(t, state, b.Target("")))
	if !errors.Is(err, destination.ErrState) {
		t.Errorf("A's state used for B: %v, %+v; want ErrState", err, rep)
	}
	if _, _, ok := b.Get("f.txt"); !ok {
		t.Error("B's object, not ours, was deleted")
	}
	// The state still serves A.
	if sr := one(t, mustSync(t, ts.base, targetOpts(t, state, a.Target("")))); sr.Deleted != 1 {
		t.Errorf("into A again: %+v", sr)
	}
}
