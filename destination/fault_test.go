package destination_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/faultserver"
)

func isResource(r *http.Request) bool {
	return r.URL.Path != "/" && !strings.HasPrefix(r.URL.Path, "/.resourcesync/") && !strings.HasPrefix(r.URL.Path, "/.well-known/")
}

// TestFaultInjection syncs through a server that fails a share of the
// requests in every way: the sync completes, and no wrong byte is ever
// installed.
func TestFaultInjection(t *testing.T) {
	dir := t.TempDir()
	for i := range 300 {
		writeFile(t, dir, fmt.Sprintf("f%03d.bin", i), []byte(strings.Repeat(fmt.Sprintf("%03d", i), 100+i*10)))
	}
	var fh *faultserver.Handler
	ts := startSource(t, dir, func(h http.Handler) http.Handler {
		fh = faultserver.New(h, 0.4, 7)
		fh.Match = isResource
		return fh
	}, nil)
	dest := t.TempDir()
	rep := mustSync(t, ts.base, syncOpts(t, dest))
	sr := one(t, rep)
	if sr.Failed != 0 || sr.Fetched != 300 {
		t.Fatalf("sync through faults: %+v", sr)
	}
	sameTree(t, dir, dest)
	counts := fh.Counts()
	for _, f := range []string{"500", "429", "reset", "truncated", "wrong-bytes", "slow"} {
		if counts[f] == 0 {
			t.Errorf("fault %s never injected: %v", f, counts)
		}
	}
	if rep.Retries < int64(fh.Injected()-counts["slow"]) {
		t.Errorf("%d retries counted for %d failing responses", rep.Retries, fh.Injected()-counts["slow"])
	}
	t.Logf("faults %v, retries %d", counts, rep.Retries)
}

// TestFaultsBeyondRetries: a resource that keeps failing is reported as
// failed and never installed with wrong bytes; a later run completes.
func TestFaultsBeyondRetries(t *testing.T) {
	dir := t.TempDir()
	for i := range 200 {
		writeFile(t, dir, fmt.Sprintf("f%03d.bin", i), []byte(strings.Repeat(fmt.Sprintf("%03d", i), 50+i)))
	}
	var fh *faultserver.Handler
	ts := startSource(t, dir, func(h http.Handler) http.Handler {
		fh = faultserver.New(h, 0.3, 11)
		fh.Match = isResource
		fh.MaxPerPath = 1000
		fh.Faults = []faultserver.Fault{faultserver.WrongBytes, faultserver.Status500, faultserver.Truncated, faultserver.Reset}
		return fh
	}, nil)
	dest := t.TempDir()
	opt := syncOpts(t, dest)
	opt.Retries = 1
	rep := mustSync(t, ts.base, opt)
	sr := one(t, rep)
	if sr.Failed == 0 || sr.Fetched+sr.Failed != 200 || rep.OK(false, false) || sr.Checkpoint.Baseline {
		t.Fatalf("expected failures: %+v", sr)
	}
	src, got := tree(t, dir), tree(t, dest)
	if len(got) != sr.Fetched {
		t.Errorf("%d files installed, %d reported fetched", len(got), sr.Fetched)
	}
	for k, v := range got {
		if string(src[k]) != string(v) {
			t.Fatalf("%s installed with wrong bytes", k)
		}
	}
	if n := leftovers(t, dest); n > 0 {
		t.Errorf("%d temporary files left", n)
	}
	fh.Share = 0
	sr = one(t, mustSync(t, ts.base, opt))
	if sr.Failed != 0 || sr.Fetched != 200-len(got) || !sr.Checkpoint.Baseline {
		t.Fatalf("rerun: %+v", sr)
	}
	sameTree(t, dir, dest)
}

// leftovers counts temporary files below dir.
func leftovers(t testing.TB, dir string) int {
	n := 0
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasPrefix(fi.Name(), ".rs-tmp-") {
			n++
		}
		return nil
	})
	return n
}

// TestFaultInjectionEverywhere: documents fail too (all but wrong bytes:
// a document has no digest to catch them by), and the sync still
// completes, from a Resource List index and with an incremental run.
func TestFaultInjectionEverywhere(t *testing.T) {
	dir := t.TempDir()
	for i := range 120 {
		writeFile(t, dir, fmt.Sprintf("f%03d.bin", i), []byte(strings.Repeat(fmt.Sprintf("%03d", i), 20+i)))
	}
	var docs, res *faultserver.Handler
	ts := startSource(t, dir, func(h http.Handler) http.Handler {
		res = faultserver.New(h, 0.3, 3)
		res.Match = isResource
		docs = faultserver.New(res, 0.3, 5)
		docs.Match = func(r *http.Request) bool { return !isResource(r) }
		docs.Faults = []faultserver.Fault{faultserver.Status500, faultserver.Status429, faultserver.Reset, faultserver.Truncated, faultserver.Slow}
		return docs
	}, nil)
	dest := t.TempDir()
	sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Failed != 0 || sr.Fetched != 120 {
		t.Fatalf("baseline through faults: %+v", sr)
	}
	sameTree(t, dir, dest)
	writeFile(t, dir, "new.bin", []byte("new"))
	os.Remove(filepath.Join(dir, "f000.bin"))
	ts.update(t)
	sr = one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Failed != 0 || sr.Fetched != 1 || sr.Deleted != 1 {
		t.Fatalf("incremental through faults: %+v", sr)
	}
	sameTree(t, dir, dest)
	if docs.Injected() == 0 || res.Injected() == 0 {
		t.Fatalf("faults not injected: documents %v, resources %v", docs.Counts(), res.Counts())
	}
	t.Logf("document faults %v; resource faults %v", docs.Counts(), res.Counts())
}
