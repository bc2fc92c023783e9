package publish_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/source/scan"
)

// TestScanThenPublish runs the real scanner over a directory, publishes
// with dumps, changes the directory, rescans and publishes again.
func TestScanThenPublish(t *testing.T) {
	out, dir := t.TempDir(), t.TempDir()
	st := openStore(t, "")
	base := server(t, out)
	files := map[string]string{
		"index.html":          "<html><body>hi</body></html>",
		"data/a b.json":       `{"a":1}`,
		"data/ü/%25 odd?.txt": "odd name",
		"img/x.png":           "\x89PNG\r\n\x1a\n....",
	}
	for p, c := range files {
		f := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(f), 0o755)
		if err := os.WriteFile(f, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().UTC()
	clk := &clock{t: t0}
	sc, err := scan.New(scan.Options{Root: dir, Store: st, Logger: quiet, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg := publish.Config{BaseURL: base, Out: out, Dumps: true, Archives: true, DumpInterval: time.Hour, Now: clk.Now, Logger: quiet,
		Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "files/"}}}
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	mustWalkClean(t, base)
	checkResourceDump(t, out, base, "default", dir, len(files))
	// The first scan is the baseline: the Resource List describes it, the
	// Change Lists start at its at with nothing in them.
	rl, rles := decodeFile(t, filepath.Join(out, ".resourcesync/default/resourcelist.xml"))
	idx := changeListIndex(t, out)
	if len(rles) != len(files) || len(idx) != 1 || !idx[0].MD.From.Equal(rl.MD.At) || !rl.MD.At.Time().Equal(t0) {
		t.Fatalf("first publish: resource list at %s with %d entries; change list index %+v", rl.MD.At, len(rles), idx)
	}
	if h, es := decodeFile(t, listFile(out, base, idx[0].Loc)); len(es) != 0 || !h.MD.From.Equal(rl.MD.At) {
		t.Errorf("first change list: from %s, %d entries %+v; want from %s, none", h.MD.From, len(es), es, rl.MD.At)
	}

	os.Remove(filepath.Join(dir, "img/x.png"))
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("<html>changed</html>"), 0o644)
	clk.Set(t0.Add(2 * time.Hour))
	if _, err := sc.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(4 * time.Hour))
	rep, err := publish.Publish(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sr := rep.Sets[0]
	if sr.Resources != 3 || sr.NewlyClosed != 1 || sr.ChangeDumps != 1 || !sr.ResourceDump {
		t.Errorf("report %+v", sr)
	}
	// Exactly the changes after the baseline, in the list that starts at it.
	idx = changeListIndex(t, out)
	if !idx[0].MD.From.Equal(rl.MD.At) {
		t.Errorf("first change list now from %s, want %s", idx[0].MD.From, rl.MD.At)
	}
	var got []string
	for _, e := range idx {
		_, es := decodeFile(t, listFile(out, base, e.Loc))
		for _, c := range es {
			got = append(got, string(c.MD.Change)+" "+strings.TrimPrefix(c.Loc, base+"files/"))
		}
	}
	if want := []string{"deleted img/x.png", "updated index.html"}; !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	mustWalkClean(t, base)
	checkResourceDump(t, out, base, "default", dir, 3)
	_, es := decodeFile(t, filepath.Join(out, ".resourcesync/default/changedump.xml"))
	for _, e := range es {
		checkPackage(t, out, base, e)
	}
}
