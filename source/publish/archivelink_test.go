package publish_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// TestListArchiveByReference: with Archives the current Resource List is
// named twice (resourcelist.xml and its generation's copy); the two names
// share one file on disk (issue 33: `serve DIR` kept a second full copy of
// the list), and a later generation replaces resourcelist.xml without
// touching the archived one.
func TestListArchiveByReference(t *testing.T) {
	out := t.TempDir()
	st := openStore(t, "")
	base := server(t, out)
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	clk := &clock{}
	cfg := publish.Config{BaseURL: base, Out: out, Archives: true, Now: clk.Now, Logger: quiet,
		Sets: []publish.Set{{Name: "default", Store: st, ResourceBase: base + "r/"}}}
	run := func(at time.Time) {
		t.Helper()
		clk.Set(at)
		if _, err := publish.Publish(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		mustWalkClean(t, base)
	}
	gens := func() []string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(out, ".resourcesync/default/resourcelists/2*/resourcelist.xml"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	stat := func(p string) os.FileInfo {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	list := filepath.Join(out, ".resourcesync/default/resourcelist.xml")
	apply(t, st, "", rs.Created, "a", "a1", t0)
	run(t0.Add(time.Minute))
	g1 := gens()
	if len(g1) != 1 {
		t.Fatalf("generations %q, want 1", g1)
	}
	if !os.SameFile(stat(list), stat(g1[0])) {
		t.Errorf("resourcelist.xml and %s are two copies, want one file under two names", g1[0])
	}
	old, err := os.ReadFile(g1[0])
	if err != nil {
		t.Fatal(err)
	}
	apply(t, st, "", rs.Created, "b", "b1", t0.Add(2*time.Minute))
	run(t0.Add(3 * time.Minute))
	g2 := gens()
	if len(g2) != 2 {
		t.Fatalf("generations %q, want 2", g2)
	}
	if b, err := os.ReadFile(g1[0]); err != nil || string(b) != string(old) {
		t.Errorf("archived generation changed by the next one (err %v)", err)
	}
	if os.SameFile(stat(list), stat(g1[0])) || !os.SameFile(stat(list), stat(g2[1])) {
		t.Errorf("resourcelist.xml is not the newest generation's file")
	}
	_, es := decodeFile(t, list)
	if len(es) != 2 {
		t.Errorf("current list has %d entries, want 2", len(es))
	}
}
