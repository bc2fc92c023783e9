package publish_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// TestChangeDumpOnDemandStale: once a resource of a closed Change List is
// updated again, that list's on-demand Change Dump package can no longer
// be produced (the Source keeps no old bytes); the next publish drops it
// from changedump.xml, so every listed package answers 200 and verifies,
// while the Change List itself stays.
func TestChangeDumpOnDemandStale(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	out, dir := t.TempDir(), t.TempDir()
	ls, base := newLazyServer(t, out)
	st := openStore(t, "")
	now := t0
	cfg := publish.Config{BaseURL: base, Out: out, Dumps: true, DumpsOnDemand: true, DumpInterval: time.Hour,
		Now: func() time.Time { return now }, Logger: quiet, NoCompanions: true,
		Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "res/"}}}
	ls.set(t, cfg)
	pub := func(at time.Time) {
		t.Helper()
		now = at
		if _, err := publish.Publish(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	pub(t0)
	apply(t, st, dir, rs.Created, "f.txt", "f one", t0.Add(time.Minute))
	apply(t, st, dir, rs.Created, "g.txt", "g one", t0.Add(2*time.Minute))
	pub(t0.Add(2 * time.Hour)) // closes the list holding f's change
	_, es := docEntries(t, base+".resourcesync/default/changedump.xml")
	if len(es) != 1 {
		t.Fatalf("%d change dump packages, want 1", len(es))
	}
	first := es[0].Loc
	checkLazyPackage(t, es[0])

	apply(t, st, dir, rs.Updated, "f.txt", "f two", t0.Add(3*time.Hour))
	pub(t0.Add(5 * time.Hour))
	_, es = docEntries(t, base+".resourcesync/default/changedump.xml")
	for _, e := range es {
		if e.Loc == first {
			t.Errorf("%s listed though f.txt changed since", first)
		}
		checkLazyPackage(t, e) // 200 and every member verifies
	}
	if len(es) != 1 || !strings.Contains(es[0].Loc, "changedumps/") {
		t.Errorf("%d change dump packages listed, want the new list's only", len(es))
	}
	cl := strings.Replace(strings.TrimSuffix(first, ".zip")+".xml", "/changedumps/", "/changelists/", 1)
	if resp, _, _ := get(t, cl); resp.StatusCode != 200 {
		t.Errorf("GET %s (the Change List stays): %d", cl, resp.StatusCode)
	}
	if resp, _, _ := get(t, first); resp.StatusCode != 404 {
		t.Errorf("GET %s: %d, want 404", first, resp.StatusCode)
	}
	// Still dropped at the next publish, and the site walks clean.
	pub(t0.Add(6 * time.Hour))
	_, es = docEntries(t, base+".resourcesync/default/changedump.xml")
	for _, e := range es {
		if e.Loc == first {
			t.Errorf("%s listed again", first)
		}
		checkLazyPackage(t, e)
	}
	mustWalkClean(t, base)
}
