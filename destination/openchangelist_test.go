package destination_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source"
)

// TestOpenChangeListLayout: a Source whose Capability List names its open
// Change List instead of the index (serve --changelist-index=false, for
// py-resync's --incremental). An incremental sync reads it; once it has
// closed and others opened, the sync follows the open list's
// rel="index" back to the lists since its checkpoint: no gap, no
// baseline (issue 19, 5f).
func TestOpenChangeListLayout(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	advance := func(d time.Duration) { now.Add(int64(d)) }
	dir := t.TempDir()
	for _, n := range []string{"a.txt", "b.txt", "c.txt"} {
		writeFile(t, dir, n, []byte(n))
	}
	ts := startSource(t, dir, nil, func(c *source.Config) {
		c.OpenChangeList, c.Now, c.ChangeListPeriod = true, clock, time.Hour
	})
	capList := func() string {
		resp, err := http.Get(ts.base + ".resourcesync/default/capabilitylist.xml")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	openList := func() string {
		cl := capList()
		i := strings.Index(cl, "/changelists/")
		if i < 0 || strings.Contains(cl, "changelist.xml</loc>") {
			t.Fatalf("the Capability List does not name the open Change List:\n%s", cl)
		}
		return cl[i : i+strings.Index(cl[i:], "<")]
	}
	first := openList()

	dest := t.TempDir()
	if sr := one(t, mustSync(t, ts.base, syncOpts(t, dest))); sr.Fetched != 3 || sr.Failed != 0 {
		t.Fatalf("baseline: %+v", sr)
	}
	advance(10 * time.Minute)
	writeFile(t, dir, "a.txt", []byte("a, v2"))
	ts.update(t)
	if sr := one(t, mustSync(t, ts.base, syncOpts(t, dest))); sr.Mode != "incremental" || sr.Fetched != 1 || sr.Failed != 0 {
		t.Fatalf("incremental from the open list: %+v", sr)
	}
	sameTree(t, dir, dest)

	// Two hours later, then two more: the lists rotate, the Capability
	// List names the newest open one.
	advance(2 * time.Hour)
	writeFile(t, dir, "b.txt", []byte("b, v2"))
	ts.update(t)
	advance(2 * time.Hour)
	os.Remove(filepath.Join(dir, "c.txt"))
	writeFile(t, dir, "d.txt", []byte("d"))
	ts.update(t)
	if now := openList(); now == first {
		t.Fatalf("the Capability List still names %s after the list closed", first)
	}
	sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Mode != "incremental" || sr.Gap != "" || sr.Fetched != 2 || sr.Deleted != 1 || sr.Failed != 0 {
		t.Fatalf("incremental across rotated lists: %+v", sr)
	}
	sameTree(t, dir, dest)
}
