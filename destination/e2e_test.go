package destination_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source"
)

// testSource is our own Source serving a directory on loopback.
type testSource struct {
	dir  string
	base string
	src  *source.Source
	srv  *httptest.Server
}

func startSource(t testing.TB, dir string, wrap func(http.Handler) http.Handler, cfg func(*source.Config)) *testSource {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	// AllowEmpty: tests here empty the Source on purpose (the Source's
	// refusal of an emptied directory is tested in package source).
	c := source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(),
		ChangeListPeriod: time.Hour, AllowEmpty: true}
	// A wrapper injects faults into the resources' GETs, or counts
	// them: the bulk GET would go round it. The tests of the bulk GET
	// turn it back on.
	c.NoBulk = wrap != nil
	if cfg != nil {
		cfg(&c)
	}
	src, err := source.Open(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	var h http.Handler = src.Handler(nil)
	if wrap != nil {
		h = wrap(h)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
	ts := &testSource{dir: dir, base: base, src: src, srv: srv}
	if beforeFirstUpdate != nil {
		beforeFirstUpdate(ts)
	}
	ts.update(t)
	return ts
}

// beforeFirstUpdate, if set, runs between the Source's Open and its first
// update (tests set it and reset it).
var beforeFirstUpdate func(*testSource)

func (ts *testSource) update(t testing.TB) {
	t.Helper()
	// The journal orders changes by time; let the clock move on.
	time.Sleep(5 * time.Millisecond)
	if _, err := ts.src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, dir, rel string, body []byte) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, body, 0o644); err != nil {
		t.Fatal(err)
	}
}

// tree returns every regular file below dir (but the state directory)
// with its bytes.
func tree(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == destination.StateDirName {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		m[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sameTree fails unless dest holds exactly the files of src, byte for byte.
func sameTree(t testing.TB, src, dest string) {
	t.Helper()
	a, b := tree(t, src), tree(t, dest)
	var diffs []string
	for k, v := range a {
		w, ok := b[k]
		switch {
		case !ok:
			diffs = append(diffs, "missing "+k)
		case !bytes.Equal(v, w):
			diffs = append(diffs, "differs "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diffs = append(diffs, "extra "+k)
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		t.Fatalf("%d differences between %s and %s: %s", len(diffs), src, dest, strings.Join(diffs[:min(len(diffs), 20)], ", "))
	}
}

type recorder struct {
	events []destination.Event
	ch     chan destination.Event
}

func syncOpts(t testing.TB, dest string) destination.Options {
	c, _ := testnet.Client(t)
	return destination.Options{Dest: dest, Client: c, Workers: 8, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}
}

func mustSync(t testing.TB, source string, opt destination.Options) *destination.Report {
	t.Helper()
	rep, err := destination.Sync(context.Background(), source, opt)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return rep
}

func one(t testing.TB, rep *destination.Report) *destination.SetReport {
	t.Helper()
	if len(rep.Sets) != 1 {
		t.Fatalf("%d sets in report", len(rep.Sets))
	}
	return rep.Sets[0]
}

func TestBaselineIncrementalAudit(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 1000
	}
	dir := t.TempDir()
	for i := range n {
		writeFile(t, dir, fmt.Sprintf("d%02d/f%05d.txt", i%50, i), []byte(fmt.Sprintf("file %d %s", i, strings.Repeat("x", i%300))))
	}
	writeFile(t, dir, "sp ace #1 100%?.txt", []byte("escaped"))
	writeFile(t, dir, "caf\u00e9/\u00fcber.txt", []byte("non-ASCII"))
	ts := startSource(t, dir, nil, nil)
	dest := t.TempDir()

	var estMu sync.Mutex
	var estimates []int64
	opt0 := syncOpts(t, dest)
	opt0.Events = func(e destination.Event) {
		if e.Kind == destination.EventTotal {
			estMu.Lock()
			estimates = append(estimates, e.Total)
			estMu.Unlock()
		}
	}
	rep := mustSync(t, ts.base, opt0)
	// Progress estimates the list's size from the share read.
	if len(estimates) == 0 || estimates[0] < int64(n)/2 || estimates[0] > int64(n)*2 {
		t.Errorf("total estimates %v for %d entries", estimates, n+2)
	}
	sr := one(t, rep)
	if sr.Fetched != n+2 || sr.Failed != 0 || !sr.Checkpoint.Baseline {
		t.Fatalf("baseline: %+v", sr)
	}
	sameTree(t, dir, dest)

	// Nothing changed: nothing fetched.
	sr = one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Fetched != 0 || sr.Failed != 0 || sr.Mode != "incremental" {
		t.Fatalf("second run: %+v", sr)
	}

	// Creates, updates (one resource twice), deletes and renames.
	writeFile(t, dir, "new/a.txt", []byte("created"))
	writeFile(t, dir, "d00/f00000.txt", []byte("updated once"))
	ts.update(t)
	writeFile(t, dir, "d00/f00000.txt", []byte("updated twice"))
	os.Remove(filepath.Join(dir, "d01/f00001.txt"))
	os.Rename(filepath.Join(dir, "d02/f00002.txt"), filepath.Join(dir, "renamed.txt"))
	os.RemoveAll(filepath.Join(dir, "d03"))
	ts.update(t)
	sr = one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Mode != "incremental" || sr.Failed != 0 || sr.Fetched != 3 || sr.Deleted != 2+n/50 {
		t.Fatalf("incremental: %+v", sr)
	}
	sameTree(t, dir, dest)
	if _, err := os.Stat(filepath.Join(dest, "d03")); err == nil {
		t.Error("emptied directory d03 left behind")
	}

	// Audit: clean.
	opt := syncOpts(t, dest)
	opt.Mode = destination.ModeAudit
	rep = mustSync(t, ts.base, opt)
	sr = one(t, rep)
	if sr.Differences() != 0 || sr.Audit[destination.AuditInSync] != len(tree(t, dir)) || !rep.OK(true, false) {
		t.Fatalf("audit: %+v", sr)
	}

	// Audit finds what was broken here, and --repair mends it.
	os.WriteFile(filepath.Join(dest, "new/a.txt"), []byte("tampered"), 0o644)
	os.Remove(filepath.Join(dest, "renamed.txt"))
	os.WriteFile(filepath.Join(dest, "stray.txt"), []byte("mine"), 0o644)
	sr = one(t, mustSync(t, ts.base, opt))
	want := map[string]int{destination.AuditChanged: 1, destination.AuditMissing: 1, destination.AuditExtra: 1}
	for k, v := range want {
		if sr.Audit[k] != v {
			t.Errorf("audit %s = %d, want %d (%v)", k, sr.Audit[k], v, sr.Audit)
		}
	}
	opt.Repair = true
	sr = one(t, mustSync(t, ts.base, opt))
	if sr.Fetched != 2 || sr.Failed != 0 {
		t.Fatalf("repair: %+v", sr)
	}
	os.Remove(filepath.Join(dest, "stray.txt")) // not ours: the repair leaves it
	sameTree(t, dir, dest)
}

// pruneChangeLists makes the Change List index name only its last list, as
// a Source does that keeps a limited history.
func pruneChangeLists(on *atomic.Bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !on.Load() || !strings.HasSuffix(r.URL.Path, "/changelist.xml") {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			dec := rs.NewDecoder(rec.Body)
			head, err := dec.Head()
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			all, err := func() (es []*rs.Entry, err error) {
				for e, err := range dec.All() {
					if err != nil {
						return nil, err
					}
					es = append(es, e)
				}
				return es, nil
			}()
			if err != nil || !head.IsIndex() || len(all) == 0 {
				http.Error(w, fmt.Sprintf("not an index with entries: %v", err), 500)
				return
			}
			w.Header().Set("Content-Type", "application/xml")
			enc := rs.NewEncoder(w)
			enc.WriteHead(head)
			enc.WriteEntry(all[len(all)-1])
			enc.Close()
		})
	}
}

// TestGapRepaired: the Source no longer lists the Change Lists the
// Destination needs; the gap is reported and repaired from the current
// Resource List.
func TestGapRepaired(t *testing.T) {
	dir := t.TempDir()
	for i := range 20 {
		writeFile(t, dir, fmt.Sprintf("f%02d.txt", i), []byte(fmt.Sprint("v1 ", i)))
	}
	var prune atomic.Bool
	ts := startSource(t, dir, pruneChangeLists(&prune), func(c *source.Config) { c.ChangeListPeriod = time.Second })
	dest := t.TempDir()
	if sr := one(t, mustSync(t, ts.base, syncOpts(t, dest))); sr.Failed != 0 {
		t.Fatalf("baseline: %+v", sr)
	}
	// Changes spread over several Change Lists.
	for i := range 3 {
		time.Sleep(1100 * time.Millisecond)
		writeFile(t, dir, fmt.Sprintf("f%02d.txt", i), []byte("v2"))
		os.Remove(filepath.Join(dir, fmt.Sprintf("f%02d.txt", 10+i)))
		ts.update(t)
	}
	time.Sleep(1100 * time.Millisecond)
	writeFile(t, dir, "late.txt", []byte("late"))
	ts.update(t)
	prune.Store(true)
	sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Gap == "" || !strings.Contains(sr.Mode, "gap repair") || sr.Failed != 0 || sr.Deleted != 3 {
		t.Fatalf("gap not reported and repaired: %+v", sr)
	}
	t.Logf("gap: %s; mode %s", sr.Gap, sr.Mode)
	sameTree(t, dir, dest)
	// And the next run is an ordinary incremental one (the Source keeps
	// the lists from now on).
	prune.Store(false)
	writeFile(t, dir, "later.txt", []byte("later"))
	ts.update(t)
	sr = one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Gap != "" || sr.Mode != "incremental" || sr.Fetched != 1 {
		t.Fatalf("after repair: %+v", sr)
	}
	sameTree(t, dir, dest)
}

// TestPrefixedBaseTwoSets: a Source under a path prefix with two sets;
// each set lands in DEST/<set>/ and has its own checkpoint.
func TestPrefixedBaseTwoSets(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for i := range 20 {
		writeFile(t, a, fmt.Sprintf("x/a%02d.txt", i), []byte(fmt.Sprint("a", i)))
		writeFile(t, b, fmt.Sprintf("b%02d.txt", i), []byte(fmt.Sprint("b", i)))
	}
	ts := startSource(t, a, func(h http.Handler) http.Handler { return h }, func(c *source.Config) {
		c.BaseURL += "pre/fix/"
		c.Sets = []source.SetConfig{{Name: "alpha", Dir: a}, {Name: "beta", Dir: b}}
	})
	base := ts.base + "pre/fix/"
	dest := t.TempDir()
	rep := mustSync(t, base, syncOpts(t, dest))
	if len(rep.Sets) != 2 || rep.Base != base {
		t.Fatalf("%+v", rep)
	}
	for _, sr := range rep.Sets {
		if sr.Fetched != 20 || sr.Failed != 0 {
			t.Fatalf("%+v", sr)
		}
	}
	sameTree(t, a, filepath.Join(dest, "alpha"))
	sameTree(t, b, filepath.Join(dest, "beta"))
	writeFile(t, b, "new.txt", []byte("new"))
	ts.update(t)
	opt := syncOpts(t, dest)
	opt.Set = "beta"
	sr := one(t, mustSync(t, base, opt))
	if sr.Set != "beta" || sr.Fetched != 1 || sr.Mode != "incremental" {
		t.Fatalf("%+v", sr)
	}
	sameTree(t, b, filepath.Join(dest, "beta"))
}
