package publish_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// TestResourceDumpDailyByDefault: with the default DumpInterval a
// Resource Dump is rebuilt at most daily, and only when the collection
// changed since the last one; the Change Dumps carry the changes between.
func TestResourceDumpDailyByDefault(t *testing.T) {
	out, dir := t.TempDir(), t.TempDir()
	st := openStore(t, "")
	base := server(t, out)
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	clk := &clock{t: t0}
	cfg := publish.Config{BaseURL: base, Out: out, Dumps: true, Archives: true, Now: clk.Now, Logger: quiet,
		Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "res/"}}}
	apply(t, st, dir, rs.Created, "a.txt", "a", t0)
	for i, s := range []struct {
		after      time.Duration // since t0
		change     string        // new content of a.txt, "" for none
		dump       bool          // a new Resource Dump
		changeDump int           // Change Dump packages written
	}{
		{time.Minute, "", true, 0},
		{2 * time.Hour, "b", false, 1},  // changed, but the dump is 2 h old; the list of the create closed
		{3 * time.Hour, "", false, 1},   // the list of "b" closed: its Change Dump
		{25 * time.Hour, "", true, 0},   // a day later: rebuilt, since it changed
		{50 * time.Hour, "", false, 0},  // nothing changed since
		{75 * time.Hour, "c", true, 0},  // changed and more than a day old
		{76 * time.Hour, "d", false, 1}, // changed again; the list of "c" closed
		{100 * time.Hour, "", true, 1},  // rebuilt; the list of "d" closed
		{200 * time.Hour, "", false, 0}, // nothing changed
	} {
		clk.Set(t0.Add(s.after))
		if s.change != "" {
			apply(t, st, dir, rs.Updated, "a.txt", s.change, clk.Now())
		}
		rep, err := publish.Publish(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if sr := rep.Sets[0]; sr.ResourceDump != s.dump || sr.ChangeDumps != s.changeDump {
			t.Errorf("step %d (+%v): Resource Dump %v, Change Dumps %d; want %v, %d", i, s.after, sr.ResourceDump, sr.ChangeDumps, s.dump, s.changeDump)
		}
	}
	checkResourceDump(t, out, base, "default", dir, 1)
	mustWalkClean(t, base)
}

// TestResourceDumpOldKeptWhileListed: a run that fails after writing a new
// Resource Dump's packages but before its document leaves the published
// document naming the old packages, which still exist; the next run
// publishes the new dump and only then removes the old generation.
func TestResourceDumpOldKeptWhileListed(t *testing.T) {
	out, dir := t.TempDir(), t.TempDir()
	st := openStore(t, "")
	base := server(t, out)
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	clk := &clock{t: t0}
	cfg := publish.Config{BaseURL: base, Out: out, Dumps: true, Now: clk.Now, Logger: quiet,
		Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "res/"}}}
	apply(t, st, dir, rs.Created, "a.txt", "a", t0)
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	_, before := decodeFile(t, filepath.Join(out, ".resourcesync/default/resourcedump.xml"))
	apply(t, st, dir, rs.Updated, "a.txt", "b", t0.Add(time.Hour))
	clk.Set(t0.Add(25 * time.Hour))
	failing := cfg
	failing.Sets = []publish.Set{{Name: "default", Store: &faultStore{Store: st, failMeta: "publish.resourcedump"}, Dir: dir, ResourceBase: base + "res/"}}
	if _, err := publish.Publish(context.Background(), failing); !errors.Is(err, errInjected) {
		t.Fatalf("err = %v, want the injected failure", err)
	}
	_, listed := decodeFile(t, filepath.Join(out, ".resourcesync/default/resourcedump.xml"))
	if len(listed) != 1 || listed[0].Loc != before[0].Loc {
		t.Fatalf("resource dump document changed by the failed run: %v", listed)
	}
	for _, e := range listed {
		checkPackage(t, out, base, e)
	}
	mustWalkClean(t, base)
	rep, err := publish.Publish(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Sets[0].ResourceDump {
		t.Errorf("no new dump: %+v", rep.Sets[0])
	}
	_, after := decodeFile(t, filepath.Join(out, ".resourcesync/default/resourcedump.xml"))
	if len(after) != 1 || after[0].Loc == before[0].Loc {
		t.Fatalf("resource dump still names %v", after)
	}
	if _, err := os.Stat(listFile(out, base, before[0].Loc)); !os.IsNotExist(err) {
		t.Errorf("old package kept after the new dump was listed: %v", err)
	}
	mustWalkClean(t, base)
}

// TestResourceDumpRebuiltForNewBase: a Source published again under another
// base URL (serve started with another --base-url on the same state) gets
// a new Resource Dump at once, whatever the interval: the old one's locs
// are outside the Source now.
func TestResourceDumpRebuiltForNewBase(t *testing.T) {
	out, dir := t.TempDir(), t.TempDir()
	st := openStore(t, "")
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	clk := &clock{t: t0}
	apply(t, st, dir, rs.Created, "a.txt", "a", t0)
	for i, base := range []string{"http://127.0.0.1:1/", "http://127.0.0.1:1/", "http://127.0.0.1:2/"} {
		clk.Set(t0.Add(time.Duration(i+1) * time.Minute))
		cfg := publish.Config{BaseURL: base, Out: out, Dumps: true, Now: clk.Now, Logger: quiet,
			Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "res/"}}}
		rep, err := publish.Publish(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if want := i != 1; rep.Sets[0].ResourceDump != want {
			t.Errorf("publish %d under %s: new Resource Dump %v, want %v", i, base, rep.Sets[0].ResourceDump, want)
		}
	}
	_, es := decodeFile(t, filepath.Join(out, ".resourcesync/default/resourcedump.xml"))
	for _, e := range es {
		if !strings.HasPrefix(e.Loc, "http://127.0.0.1:2/") {
			t.Errorf("Resource Dump lists %s, not under the new base", e.Loc)
		}
	}
}
