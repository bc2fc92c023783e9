package destination_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
)

// TestVanishedDuringRun: a resource that changes or goes away at the
// Source after the run read the lists naming it (its GET answers 404, or
// bytes that no longer match) is judged against what the Source says
// now: its newer version is fetched, or it is deleted when the Source now
// says so (or no longer lists it); it is reported as vanished, and the run
// is in sync. A 404 or a mismatch that the Source's later state does not
// explain still fails the run (issue 30 §1, issue 32 item 8).
func TestVanishedDuringRun(t *testing.T) {
	type act int
	const (
		remove  act = iota // the file is deleted at the Source, which rescans
		rewrite            // the file gets new bytes, and the Source rescans
		lie404             // the server answers 404, the Source still lists it
		lieBody            // the server answers other bytes, the Source unchanged
	)
	for _, tc := range []struct {
		name string
		// incremental: a first sync, then a change to a.txt, then the
		// sync during which a.txt changes again; else a baseline during
		// which a.txt changes.
		incremental bool
		// noChangeLists: the Source answers 404 for its Change Lists, so
		// that its later state is the Resource List, read again.
		noChangeLists bool
		act           act
		wantVanished  int
		wantFailed    int
	}{
		{"baseline, deleted", false, false, remove, 1, 0},
		{"baseline, rewritten", false, false, rewrite, 1, 0},
		{"incremental, deleted", true, false, remove, 1, 0},
		{"incremental, rewritten", true, false, rewrite, 1, 0},
		{"no Change Lists, deleted", false, true, remove, 1, 0},
		{"no Change Lists, rewritten", false, true, rewrite, 1, 0},
		{"404 the Source does not explain", false, false, lie404, 0, 1},
		{"incremental, 404 the Source does not explain", true, false, lie404, 0, 1},
		{"mismatch the Source does not explain", false, false, lieBody, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, n := range []string{"a.txt", "b.txt", "sub/c.txt"} {
				writeFile(t, dir, n, []byte("first "+n))
			}
			var ts *testSource
			var armed atomic.Bool
			var once sync.Once
			wrap := func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if tc.noChangeLists && strings.Contains(r.URL.Path, "changelist") {
						http.NotFound(w, r)
						return
					}
					if r.URL.Path != "/a.txt" || !armed.Load() {
						h.ServeHTTP(w, r)
						return
					}
					switch tc.act {
					case remove, rewrite:
						once.Do(func() {
							if tc.act == remove {
								os.Remove(filepath.Join(dir, "a.txt"))
							} else {
								writeFile(t, dir, "a.txt", []byte("newer bytes of a.txt, written while the run read the lists"))
							}
							ts.update(t)
						})
						h.ServeHTTP(w, r)
					case lie404:
						http.NotFound(w, r)
					case lieBody:
						w.Write([]byte("not the bytes the Source lists"))
					}
				})
			}
			ts = startSource(t, dir, wrap, nil)
			dest := t.TempDir()
			source := ts.base
			if tc.incremental {
				if sr := one(t, mustSync(t, source, syncOpts(t, dest))); sr.Failed != 0 {
					t.Fatalf("first sync: %+v", sr)
				}
				writeFile(t, dir, "a.txt", []byte("second version of a.txt"))
				ts.update(t)
			}
			armed.Store(true)
			opt := syncOpts(t, dest)
			var mu sync.Mutex
			var vanished []destination.Event
			opt.Events = func(e destination.Event) {
				if e.Kind == destination.EventVanished {
					mu.Lock()
					vanished = append(vanished, e)
					mu.Unlock()
				}
			}
			rep := mustSync(t, source, opt)
			sr := one(t, rep)
			if tc.incremental && sr.Mode != "incremental" {
				t.Fatalf("mode %s, want incremental", sr.Mode)
			}
			if sr.Failed != tc.wantFailed || len(vanished) != tc.wantVanished {
				t.Fatalf("failed %d, vanished events %d (%+v); want %d, %d; report %+v", sr.Failed, len(vanished), vanished, tc.wantFailed, tc.wantVanished, sr)
			}
			if ok := rep.OK(false, false); ok != (tc.wantFailed == 0) {
				t.Fatalf("Report.OK = %v with %d failures", ok, sr.Failed)
			}
			if tc.wantFailed > 0 {
				return
			}
			if tc.wantVanished > 0 && (vanished[0].Path != "a.txt" || !strings.Contains(sr.Summary(false), "vanished 1")) {
				t.Errorf("vanished event %+v, summary %q", vanished[0], sr.Summary(false))
			}
			sameTree(t, dir, dest)
			// The next run finds nothing to do, and the audit agrees.
			armed.Store(false)
			if sr := one(t, mustSync(t, source, syncOpts(t, dest))); sr.Failed != 0 || sr.Fetched != 0 || sr.Deleted != 0 {
				t.Errorf("next run: %+v", sr)
			}
			aopt := syncOpts(t, dest)
			aopt.Mode = destination.ModeAudit
			if rep := mustSync(t, source, aopt); !rep.OK(true, false) {
				t.Errorf("audit after the run: %+v", one(t, rep))
			}
		})
	}
}
