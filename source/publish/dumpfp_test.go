package publish_test

import (
	"context"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// TestResourceDumpOnlyWhenChanged: once DumpInterval has passed, a new
// Resource Dump is written only if the inventory changed since the last one
// (the journal seq, baseline and count it was made from are compared).
func TestResourceDumpOnlyWhenChanged(t *testing.T) {
	out, dir := t.TempDir(), t.TempDir()
	st := openStore(t, "")
	base := server(t, out)
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	clk := &clock{t: t0}
	cfg := publish.Config{BaseURL: base, Out: out, Dumps: true, Archives: true, DumpInterval: time.Minute,
		Now: clk.Now, Logger: quiet,
		Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "res/"}}}
	apply(t, st, dir, rs.Created, "a.txt", "a", t0)
	steps := []struct {
		change bool
		want   bool
	}{{false, true}, {false, false}, {false, false}, {true, true}, {false, false}}
	for i, s := range steps {
		clk.Set(t0.Add(time.Duration(i+1) * time.Hour))
		if s.change {
			apply(t, st, dir, rs.Updated, "a.txt", "changed", clk.Now())
		}
		rep, err := publish.Publish(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := rep.Sets[0].ResourceDump; got != s.want {
			t.Errorf("run %d (inventory changed: %v): new Resource Dump %v, want %v", i, s.change, got, s.want)
		}
	}
	checkResourceDump(t, out, base, "default", dir, 1)
}
