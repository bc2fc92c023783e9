package publish_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// copyDocs copies the files of out other than companions to dst.
func copyDocs(t *testing.T, out, dst string) {
	t.Helper()
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".html") {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f := filepath.Join(dst, rel)
		os.MkdirAll(filepath.Dir(f), 0o755)
		return os.WriteFile(f, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCompanionsStreamedLikeRendered: the pages built while the documents
// are written (no parse) are byte for byte those rendered from the XML,
// for Resource List parts of several pages, Change Lists with every kind
// of change, indexes and archives. After a change, only the pages of the
// documents whose bytes changed are rewritten.
func TestCompanionsStreamedLikeRendered(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	out := t.TempDir()
	st := openStore(t, "")
	fill(t, st, 2500, t0)
	clk := &clock{t: t0.Add(time.Minute)}
	base := "http://example.com/"
	cfg := publish.Config{BaseURL: base, Out: out, Archives: true, Now: clk.Now, Logger: quiet, MaxEntries: 2200,
		Sets: []publish.Set{{Name: "default", Store: st, ResourceBase: base + "res/"}}}
	compare := comparer(t, &cfg)
	first := compare("first publish")
	if len(first) < 10 {
		t.Fatalf("only %d pages", len(first))
	}
	// Changes of every kind, in a Change List that closes.
	at := t0.Add(2 * time.Minute)
	apply(t, st, "", rs.Created, "new/a.txt", "a <&> \"quoted\" +", at)
	apply(t, st, "", rs.Updated, pathOf(5), "changed", at)
	apply(t, st, "", rs.Deleted, pathOf(7), "", at)
	clk.Set(t0.Add(3 * time.Minute))
	second := compare("after changes")
	rewritten, kept := 0, 0
	for rel, fi := range first {
		fi2, ok := second[rel]
		switch {
		case !ok:
		case os.SameFile(fi, fi2) && fi.ModTime().Equal(fi2.ModTime()):
			kept++
		default:
			rewritten++
		}
	}
	if rewritten == 0 || kept == 0 {
		t.Errorf("after 3 changes: %d pages rewritten, %d kept; want some of each", rewritten, kept)
	}
	t.Logf("%d pages rewritten, %d kept", rewritten, kept)
	// Fewer entries: one list (written as the generation's and copied to
	// resourcelist.xml), of two pages.
	for i := 1500; i < 2500; i++ {
		apply(t, st, "", rs.Deleted, pathOf(i), "", t0.Add(4*time.Minute))
	}
	clk.Set(t0.Add(5 * time.Minute))
	third := compare("one list")
	if _, ok := third[".resourcesync/default/resourcelist.2.html"]; !ok {
		t.Error("the single list has no page 2")
	}
	// The pages of a part whose range no change touched are kept.
	for rel, fi := range first {
		if strings.Contains(rel, "/parts/") && strings.Contains(rel, "-00002") {
			if fi2, ok := second[rel]; !ok || !os.SameFile(fi, fi2) {
				t.Errorf("%s (no change in its range) rewritten or removed", rel)
			}
		}
	}
}

// comparer returns a function that publishes cfg and checks that the
// pages this run wrote are those rendered from the XML alone (an
// unchanged document keeps its pages, whose breadcrumbs may name an older
// kind of the documents above it, as before).
func comparer(t *testing.T, cfgp *publish.Config) func(what string) map[string]os.FileInfo {
	var prev map[string]os.FileInfo
	return func(what string) map[string]os.FileInfo {
		t.Helper()
		cfg := *cfgp
		out := cfg.Out
		if _, err := publish.Publish(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		ref := t.TempDir()
		copyDocs(t, out, ref)
		rcfg := cfg
		rcfg.Out = ref
		if err := publish.RenderCompanions(rcfg); err != nil {
			t.Fatal(err)
		}
		got, _ := companionFiles(t, out)
		want, _ := companionFiles(t, ref)
		if len(got) != len(want) {
			t.Errorf("%s: %d pages, rendered from the XML %d", what, len(got), len(want))
		}
		for rel := range want {
			if fi, ok := prev[rel]; ok && os.SameFile(fi, got[rel]) && fi.ModTime().Equal(got[rel].ModTime()) {
				continue
			}
			a, err1 := os.ReadFile(filepath.Join(out, rel))
			b, err2 := os.ReadFile(filepath.Join(ref, rel))
			if err1 != nil || err2 != nil || string(a) != string(b) {
				t.Errorf("%s: %s differs from the page rendered from the XML (%v, %v)", what, rel, err1, err2)
			}
		}
		prev = got
		return got
	}
}

// TestCompanionsStreamedLikeRenderedDumps: the same with dumps, whose
// manifest copies get their pages from the manifest's stream.
func TestCompanionsStreamedLikeRenderedDumps(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	out, dir := t.TempDir(), t.TempDir()
	st := openStore(t, "")
	for i := range 1200 {
		apply(t, st, dir, rs.Created, pathOf(i), "content "+itoa(i), t0)
	}
	clk := &clock{t: t0.Add(time.Minute)}
	base := "http://example.com/"
	cfg := publish.Config{BaseURL: base, Out: out, Dumps: true, Archives: true, Now: clk.Now, Logger: quiet, MaxEntries: 1100,
		Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "res/"}}}
	pages := comparer(t, &cfg)("first publish with dumps")
	n := 0
	for rel := range pages {
		if strings.HasSuffix(rel, ".manifest.2.html") {
			n++
		}
	}
	if n == 0 {
		t.Errorf("no manifest of two pages among %d pages", len(pages))
	}
}
