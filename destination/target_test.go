package destination_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/storage"
	"github.com/resourcesync-go/resourcesync/storage/local"
	"github.com/resourcesync-go/resourcesync/storage/mem"
)

var memN atomic.Int64

func newMem(t *testing.T) *mem.Store {
	name := fmt.Sprintf("dest-target-%d", memN.Add(1))
	t.Cleanup(func() { mem.Forget(name) })
	return mem.Open(name)
}

// targetOpts are syncOpts writing into tg, the state in stateDir.
func targetOpts(t *testing.T, stateDir string, tg storage.Target) destination.Options {
	opt := syncOpts(t, stateDir)
	opt.Target = tg
	return opt
}

// sameObjects fails unless the Store holds exactly the files of src (and
// the extra objects named), byte for byte.
func sameObjects(t *testing.T, src string, s *mem.Store, extra map[string]string) {
	t.Helper()
	want := tree(t, src)
	for k, v := range extra {
		want[k] = []byte(v)
	}
	var diffs []string
	for _, k := range s.Keys() {
		o, _, _ := s.Get(k)
		w, ok := want[k]
		switch {
		case !ok:
			diffs = append(diffs, "extra "+k)
		case !bytes.Equal(o.Data, w):
			diffs = append(diffs, "differs "+k)
		}
		delete(want, k)
	}
	for k := range want {
		diffs = append(diffs, "missing "+k)
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		t.Fatalf("%d differences between %s and the target: %s", len(diffs), src, strings.Join(diffs[:min(len(diffs), 20)], ", "))
	}
}

// TestSyncIntoTarget: a mirror written through a storage.Target (the
// in-memory one): baseline, incremental, the objects the tool did not
// write never overwritten nor deleted, an object changed in the Target
// since it was installed kept, audit (extras listed from the Target) and
// repair, dry run, and only the state in the local directory.
func TestSyncIntoTarget(t *testing.T) {
	dir := t.TempDir()
	for i := range 40 {
		writeFile(t, dir, fmt.Sprintf("d%d/f%02d.txt", i%4, i), []byte(fmt.Sprintf("file %d %s", i, strings.Repeat("x", i))))
	}
	writeFile(t, dir, "sp ace #1 100%?.txt", []byte("escaped"))
	writeFile(t, dir, "caf\u00e9/\u00fcber.txt", []byte("non-ASCII"))
	writeFile(t, dir, "a/b/c/d/e/deep.txt", []byte("deep"))
	writeFile(t, dir, "theirs.txt", []byte("the Source's"))
	ts := startSource(t, dir, nil, nil)
	st := newMem(t)
	st.Put("theirs.txt", []byte("someone else's object"))
	st.Put("unlisted.txt", []byte("someone else's, not at the Source"))
	others := map[string]string{"theirs.txt": "someone else's object", "unlisted.txt": "someone else's, not at the Source"}
	state := t.TempDir()
	tg := st.Target("")

	sr := one(t, mustSync(t, ts.base, targetOpts(t, state, tg)))
	if sr.Fetched != 43 || sr.Failed != 1 || len(sr.Failures) != 1 || !strings.Contains(sr.Failures[0].Error, "not written by resourcesync") {
		t.Fatalf("baseline: %+v", sr)
	}
	wantTree := func(extra map[string]string) {
		t.Helper()
		d := t.TempDir()
		for k, v := range tree(t, dir) {
			if _, ok := extra[k]; !ok {
				writeFile(t, d, k, v)
			}
		}
		sameObjects(t, d, st, extra)
	}
	wantTree(others)
	ents, _ := os.ReadDir(state)
	if len(ents) != 1 || ents[0].Name() != destination.StateDirName {
		t.Errorf("the state directory holds %v, want only %s", ents, destination.StateDirName)
	}
	if o, in, _ := st.Get("d1/f01.txt"); in.ModTime.IsZero() || len(o.Data) == 0 {
		t.Errorf("object without mtime: %+v", in)
	}

	// Changes: one edited, one deleted, one added at the Source; one of
	// ours changed in the Target by someone else, then edited and deleted
	// at the Source: neither overwritten nor deleted.
	writeFile(t, dir, "d0/f00.txt", []byte("edited at the Source"))
	os.Remove(filepath.Join(dir, "d1/f01.txt"))
	writeFile(t, dir, "new/added.txt", []byte("added"))
	st.Put("d2/f02.txt", []byte("changed in the bucket"))
	writeFile(t, dir, "d2/f02.txt", []byte("edited at the Source too"))
	st.Put("d3/f03.txt", []byte("changed in the bucket, then deleted at the Source"))
	os.Remove(filepath.Join(dir, "d3/f03.txt"))
	os.Remove(filepath.Join(dir, "theirs.txt"))
	ts.update(t)
	sr = one(t, mustSync(t, ts.base, targetOpts(t, state, tg)))
	if sr.Fetched != 2 || sr.Deleted != 1 || sr.Failed != 1 {
		t.Fatalf("incremental: %+v", sr)
	}
	if _, _, ok := st.Get("d1/f01.txt"); ok {
		t.Error("d1/f01.txt, deleted at the Source, still in the target")
	}
	others["d2/f02.txt"] = "changed in the bucket"
	others["d3/f03.txt"] = "changed in the bucket, then deleted at the Source"
	wantTree(others)

	// Audit: in sync but for the objects not ours (extra: theirs.txt,
	// unlisted.txt, d3/f03.txt; changed: d2/f02.txt); repair brings back
	// one removed from the Target.
	st.Delete("d1/f05.txt")
	opt := targetOpts(t, state, tg)
	opt.Mode = destination.ModeAudit
	sr = one(t, mustSync(t, ts.base, opt))
	if sr.Audit[destination.AuditMissing] != 1 || sr.Audit[destination.AuditExtra] != 3 || sr.Audit[destination.AuditChanged] != 1 {
		t.Fatalf("audit: %+v", sr.Audit)
	}
	if _, _, ok := st.Get("d1/f05.txt"); ok {
		t.Fatal("audit without repair wrote")
	}
	opt.DryRun = true
	opt.Repair = true
	mustSync(t, ts.base, opt)
	if _, _, ok := st.Get("d1/f05.txt"); ok {
		t.Fatal("dry run wrote")
	}
	opt.DryRun = false
	mustSync(t, ts.base, opt)
	wantTree(others)
}

// TestSyncIntoTargetMaxDelete: --max-delete holds on a Target as on a
// directory.
func TestSyncIntoTargetMaxDelete(t *testing.T) {
	dir := t.TempDir()
	for i := range 120 {
		writeFile(t, dir, fmt.Sprintf("f%03d", i), []byte{byte(i)})
	}
	ts := startSource(t, dir, nil, nil)
	st := newMem(t)
	state := t.TempDir()
	mustSync(t, ts.base, targetOpts(t, state, st.Target("")))
	for i := range 100 {
		os.Remove(filepath.Join(dir, fmt.Sprintf("f%03d", i)))
	}
	ts.update(t)
	sr := one(t, mustSync(t, ts.base, targetOpts(t, state, st.Target(""))))
	if sr.Deleted != 0 || sr.DeleteRefused == 0 || st.Len() != 120 {
		t.Fatalf("over --max-delete: %d objects left, %+v", st.Len(), sr)
	}
	opt := targetOpts(t, state, st.Target(""))
	opt.MaxDelete = destination.NoDeleteLimit
	one(t, mustSync(t, ts.base, opt))
	if st.Len() != 20 {
		t.Fatalf("%d objects after the deletions were allowed", st.Len())
	}
}

// TestSyncIntoLocalTargetSymlink: a local directory written through the
// generic Target path keeps the trust suite's rule: a symbolic link in
// the mirror is not written through, nothing lands outside.
func TestSyncIntoLocalTargetSymlink(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "in/x.txt", []byte("x"))
	writeFile(t, dir, "ok.txt", []byte("ok"))
	ts := startSource(t, dir, nil, nil)
	base := t.TempDir()
	mirror, outside := filepath.Join(base, "mirror"), filepath.Join(base, "outside")
	os.MkdirAll(mirror, 0o755)
	os.MkdirAll(outside, 0o755)
	if err := os.Symlink(outside, filepath.Join(mirror, "in")); err != nil {
		t.Skip(err)
	}
	tg, err := local.OpenTarget(mirror)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	sr := one(t, mustSync(t, ts.base, targetOpts(t, t.TempDir(), tg)))
	if sr.Fetched != 1 || sr.Failed != 1 {
		t.Fatalf("%+v", sr)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside the mirror: %v", ents)
	}
	if b, err := os.ReadFile(filepath.Join(mirror, "ok.txt")); err != nil || string(b) != "ok" {
		t.Errorf("ok.txt: %q %v", b, err)
	}
}

// TestSyncIntoTargetFsyncEach: with every commit durable by itself
// (--fsync, and every notification), the batch's records are committed
// too: the mirror's directories are not looked for in the state's.
func TestSyncIntoTargetFsyncEach(t *testing.T) {
	dir := t.TempDir()
	for i := range 6 {
		writeFile(t, dir, fmt.Sprintf("d%d/f%d", i%2, i), []byte{byte(i)})
	}
	ts := startSource(t, dir, nil, nil)
	for _, name := range []string{"mem", "local"} {
		t.Run(name, func(t *testing.T) {
			var tg storage.Target = newMem(t).Target("")
			if name == "local" {
				lt, err := local.OpenTarget(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				defer lt.Close()
				tg = lt
			}
			state := t.TempDir()
			opt := targetOpts(t, state, tg)
			opt.FsyncEach = true
			rep, err := destination.Sync(context.Background(), ts.base, opt)
			if err != nil || !rep.OK(false, false) || one(t, rep).Fetched != 6 {
				t.Fatalf("%v %+v", err, rep)
			}
			opt.Mode = destination.ModeBaseline
			sr := one(t, mustSync(t, ts.base, opt))
			if sr.Skipped != 6 || sr.Adopted != 0 {
				t.Fatalf("second run: %+v (the first one's records lost?)", sr)
			}
		})
	}
}

// TestSyncIntoTargetTypesAndCase: an object is stored with the Source's
// media type; names that differ only in case are two objects in a bucket,
// whatever the file system of the state folds.
func TestSyncIntoTargetTypesAndCase(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "page.html", []byte("<p>x</p>"))
	writeFile(t, dir, "Case.txt", []byte("upper"))
	writeFile(t, dir, "case.txt", []byte("lower"))
	ts := startSource(t, dir, nil, nil)
	st := newMem(t)
	opt := targetOpts(t, t.TempDir(), st.Target(""))
	opt.FoldsCase = func(string) (bool, error) { return true, nil } // a state on a folding file system
	sr := one(t, mustSync(t, ts.base, opt))
	if sr.Fetched != 3 || sr.Failed != 0 {
		t.Fatalf("%+v", sr)
	}
	if _, in, _ := st.Get("page.html"); !strings.HasPrefix(in.ContentType, "text/html") {
		t.Errorf("page.html stored as %q", in.ContentType)
	}
}

// TestSyncIntoTargetVersionOwns: an object replaced in the Target by one
// of the same length and mtime is told apart by its Version, which the
// state records: it is neither deleted nor overwritten.
func TestSyncIntoTargetVersionOwns(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "del.txt", []byte("aaaa"))
	writeFile(t, dir, "upd.txt", []byte("bbbb"))
	ts := startSource(t, dir, nil, nil)
	st := newMem(t)
	state := t.TempDir()
	mustSync(t, ts.base, targetOpts(t, state, st.Target("")))
	for _, k := range []string{"del.txt", "upd.txt"} {
		_, in, _ := st.Get(k)
		st.PutObject(k, mem.Object{Data: []byte("ZZZZ"), ModTime: in.ModTime})
	}
	os.Remove(filepath.Join(dir, "del.txt"))
	writeFile(t, dir, "upd.txt", []byte("cccc"))
	ts.update(t)
	sr := one(t, mustSync(t, ts.base, targetOpts(t, state, st.Target(""))))
	if sr.Deleted != 0 || sr.Kept != 1 || sr.Failed != 1 {
		t.Errorf("%+v", sr)
	}
	for _, k := range []string{"del.txt", "upd.txt"} {
		if o, _, _ := st.Get(k); string(o.Data) != "ZZZZ" {
			t.Errorf("%s, replaced in the Target, now %q", k, o.Data)
		}
	}
}

// statCounter is a Target that counts its Stats (its HEADs, on a bucket)
// and the most Commits under way at once (each held 5 ms).
type statCounter struct {
	storage.Target
	n             atomic.Int64
	now, mostBusy atomic.Int64
}

func (s *statCounter) Stat(ctx context.Context, key string) (storage.Info, error) {
	s.n.Add(1)
	return s.Target.Stat(ctx, key)
}

func (s *statCounter) Create(ctx context.Context, key string, opt storage.PutOptions) (storage.Writer, error) {
	w, err := s.Target.Create(ctx, key, opt)
	if err != nil {
		return nil, err
	}
	return &busyWriter{Writer: w, s: s}, nil
}

type busyWriter struct {
	storage.Writer
	s *statCounter
}

func (w *busyWriter) Commit(ctx context.Context) (storage.Info, error) {
	n := w.s.now.Add(1)
	defer w.s.now.Add(-1)
	for {
		m := w.s.mostBusy.Load()
		if n <= m || w.s.mostBusy.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(5 * time.Millisecond)
	return w.Writer.Commit(ctx)
}

// TestSyncIntoEmptyTargetNoStat: a first baseline into an empty Target
// (no object under it, no record in the state) asks nothing per entry
// before writing it: one listing showed nothing there, and each write's
// NoReplace refuses whatever appears meanwhile (on a bucket a Stat is a
// HEAD, one request per file). From a Resource Dump, its members are
// written as many at a time as the sync's workers, whatever their
// directories. An object someone put there first, or a state that names
// objects, keeps the Stats; the mirror is exact either way.
func TestSyncIntoEmptyTargetNoStat(t *testing.T) {
	dir := t.TempDir()
	for i := range 60 {
		writeFile(t, dir, fmt.Sprintf("d%d/f%02d.txt", i%2, i), []byte(fmt.Sprintf("file %d", i)))
	}
	ts := startSource(t, dir, nil, func(c *source.Config) { c.Dumps = true })
	for _, noDump := range []bool{false, true} {
		t.Run(fmt.Sprint("nodump=", noDump), func(t *testing.T) {
			st := newMem(t)
			tg := &statCounter{Target: st.Target("")}
			state := t.TempDir()
			opt := targetOpts(t, state, tg)
			opt.NoDump = noDump
			sr := one(t, mustSync(t, ts.base, opt))
			if sr.Failed != 0 || (sr.FromDump == 60) == noDump {
				t.Fatalf("baseline: %+v", sr)
			}
			sameObjects(t, dir, st, nil)
			if n := tg.n.Load(); n != 0 {
				t.Errorf("a first baseline into an empty Target made %d Stats, want 0", n)
			}
			if m := tg.mostBusy.Load(); m < 6 {
				t.Errorf("at most %d objects written at once by 8 workers", m)
			}
			// Not empty any more: the next run looks at what is there.
			writeFile(t, dir, "d0/f00.txt", []byte("edited"))
			ts.update(t)
			if sr := one(t, mustSync(t, ts.base, opt)); sr.Fetched != 1 || sr.Failed != 0 {
				t.Fatalf("incremental: %+v", sr)
			}
			sameObjects(t, dir, st, nil)
			if tg.n.Load() == 0 {
				t.Error("an incremental sync into a Target did not Stat its objects")
			}
			writeFile(t, dir, "d0/f00.txt", []byte("file 0"))
			ts.update(t)
		})
	}
	// Someone's object there first: the baseline looks, and leaves it.
	st := newMem(t)
	st.Put("d1/f01.txt", []byte("someone else's"))
	tg := &statCounter{Target: st.Target("")}
	sr := one(t, mustSync(t, ts.base, targetOpts(t, t.TempDir(), tg)))
	if sr.Failed != 1 || tg.n.Load() == 0 {
		t.Fatalf("baseline over someone's object: %d Stats, %+v", tg.n.Load(), sr)
	}
	if o, _, _ := st.Get("d1/f01.txt"); string(o.Data) != "someone else's" {
		t.Fatalf("someone's object overwritten: %q", o.Data)
	}
}

// TestForceTarget: --force on a Target copies an object the tool did not
// write to KEY.resourcesync-old before it replaces it, and refuses when
// that key is taken.
func TestForceTarget(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "theirs.txt", []byte("the Source's"))
	writeFile(t, dir, "taken.txt", []byte("the Source's taken"))
	ts := startSource(t, dir, nil, nil)
	st := newMem(t)
	st.Put("theirs.txt", []byte("someone else's object"))
	st.Put("taken.txt", []byte("someone else's taken"))
	st.Put("taken.txt.resourcesync-old", []byte("older"))
	opt := targetOpts(t, t.TempDir(), st.Target(""))
	if sr := one(t, mustSync(t, ts.base, opt)); sr.Failed != 2 || sr.Replaced != 0 {
		t.Fatalf("without --force: %+v", sr)
	}
	opt.Force = true
	sr := one(t, mustSync(t, ts.base, opt))
	if sr.Replaced != 1 || sr.Failed != 1 || !strings.Contains(sr.Failures[0].Error, "taken.txt.resourcesync-old is taken") {
		t.Fatalf("--force: %+v", sr)
	}
	want := map[string]string{"theirs.txt": "the Source's", "theirs.txt.resourcesync-old": "someone else's object",
		"taken.txt": "someone else's taken", "taken.txt.resourcesync-old": "older"}
	for k, v := range want {
		o, _, _ := st.Get(k)
		if string(o.Data) != v {
			t.Errorf("%s is %q, want %q", k, o.Data, v)
		}
	}
}

// TestForceTargetAfterKill: a --force run killed between its copy of an
// object to KEY.resourcesync-old and the install leaves both keys with
// the same bytes. The next --force run takes the copy as done, as it does
// in a directory (a second name of the same file), instead of refusing
// the key for good: nothing of the object is lost, its bytes are kept.
// A copy of other bytes is still refused.
func TestForceTargetAfterKill(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "x.txt", []byte("the Source's x"))
	writeFile(t, dir, "y.txt", []byte("the Source's y"))
	ts := startSource(t, dir, nil, nil)
	st := newMem(t)
	st.Put("x.txt", []byte("someone else's x"))
	st.Put("x.txt.resourcesync-old", []byte("someone else's x"))
	st.Put("y.txt", []byte("someone else's y"))
	st.Put("y.txt.resourcesync-old", []byte("someone else's y, older"))
	opt := targetOpts(t, t.TempDir(), st.Target(""))
	opt.Force = true
	sr := one(t, mustSync(t, ts.base, opt))
	if sr.Replaced != 1 || sr.Failed != 1 || !strings.Contains(sr.Failures[0].Error, "y.txt.resourcesync-old is taken") {
		t.Errorf("--force: %+v", sr)
	}
	want := map[string]string{"x.txt": "the Source's x", "x.txt.resourcesync-old": "someone else's x",
		"y.txt": "someone else's y", "y.txt.resourcesync-old": "someone else's y, older"}
	for k, v := range want {
		if o, _, _ := st.Get(k); string(o.Data) != v {
			t.Errorf("%s is %q, want %q", k, o.Data, v)
		}
	}
}
