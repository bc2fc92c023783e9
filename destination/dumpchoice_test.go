package destination_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/source"
)

// TestBaselineDumpOrBulk: a baseline from our Source, which offers both a
// Resource Dump and its bulk GET, takes the bulk GET by default (faster,
// each member verified against the Resource List as a dump member is
// against its manifest) and never downloads a package; PreferDump (sync
// --dumps) takes the dump, NoDump neither, and a run that cannot use the
// bulk GET (--rate) still takes the dump.
func TestBaselineDumpOrBulk(t *testing.T) {
	const n = 120
	for _, tc := range []struct {
		name             string
		opt              func(*destination.Options)
		wantDump         bool
		wantPosts, wantZ bool
		mode             string
	}{
		{"default", func(*destination.Options) {}, false, true, false, "baseline"},
		{"prefer dump", func(o *destination.Options) { o.PreferDump = true }, true, false, true, "baseline (dump)"},
		{"no dump", func(o *destination.Options) { o.NoDump = true }, false, true, false, "baseline"},
		{"rate", func(o *destination.Options) { o.RatePerHost = 1e6 }, true, false, true, "baseline (dump)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := bulkTree(t, n)
			var c bulkCounts
			var zips atomic.Int64
			wrap := func(h http.Handler) http.Handler {
				h = c.wrap("", dir)(h)
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if strings.HasSuffix(r.URL.Path, ".zip") {
						zips.Add(1)
					}
					h.ServeHTTP(w, r)
				})
			}
			ts := startSource(t, dir, wrap, func(c *source.Config) { c.NoBulk = false; c.Dumps = true })
			dest := t.TempDir()
			opt := syncOpts(t, dest)
			tc.opt(&opt)
			rep := mustSync(t, ts.base, opt)
			sameTree(t, dir, dest)
			sr := one(t, rep)
			if sr.Failed != 0 || sr.Mode != tc.mode {
				t.Errorf("failed %d, mode %q; want 0, %q", sr.Failed, sr.Mode, tc.mode)
			}
			if got := sr.FromDump > 0; got != tc.wantDump {
				t.Errorf("%d from the dump, want some: %v", sr.FromDump, tc.wantDump)
			}
			if tc.wantDump && sr.FromDump < n {
				t.Errorf("%d from the dump, want at least %d", sr.FromDump, n)
			}
			if got := c.posts.Load() > 0; got != tc.wantPosts {
				t.Errorf("%d bulk requests, want some: %v", c.posts.Load(), tc.wantPosts)
			}
			if got := zips.Load() > 0; got != tc.wantZ {
				t.Errorf("%d package downloads, want some: %v", zips.Load(), tc.wantZ)
			}
		})
	}
}

// dumpOpts are syncOpts taking the Resource Dump even from our Source,
// which offers its bulk GET: for the tests of the dump path.
func dumpOpts(t testing.TB, dest string) destination.Options {
	o := syncOpts(t, dest)
	o.PreferDump = true
	return o
}
