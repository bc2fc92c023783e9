package publish_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/npmtest"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// TestPlainSitemap publishes plain sitemaps (split by the URL limit, set
// low here), validates every part and the index with xmllint against the
// sitemaps.org XSDs alone (which refuse any rs: element), checks the
// robots.txt line and reads the whole tree with the npm sitemapper, as a
// crawler does; then a deletion shrinks the parts and the stale part goes.
func TestPlainSitemap(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatalf("xmllint not found (apt-get install libxml2-utils): %v", err)
	}
	defer publish.SetPlainMaxURLs(3)()
	out := t.TempDir()
	base := server(t, out)
	st := openStore(t, "")
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	var want []string
	for i := range 7 {
		name := fmt.Sprintf("d/f%d&<x>.txt", i)
		apply(t, st, "", rs.Created, name, "c", t0)
		want = append(want, base+"r/"+strings.NewReplacer("&", "&", "<", "%3C", ">", "%3E").Replace(name))
	}
	cfg := publish.Config{BaseURL: base, Out: out, Logger: quiet, Now: func() time.Time { return t0.Add(time.Minute) }, PlainSitemap: true,
		Sets: []publish.Set{{Name: "s", Store: st, ResourceBase: base + "r/"}}}
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	schemas, _ := filepath.Abs("../../testdata/conformance/schemas")
	validate := func(rel, xsd string) {
		t.Helper()
		if b, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", filepath.Join(schemas, xsd), filepath.Join(out, rel)).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", rel, err, b)
		}
	}
	validate(publish.PlainSitemapPath, "siteindex.xsd")
	parts, _ := filepath.Glob(filepath.Join(out, ".resourcesync/s/sitemap/part-*.xml"))
	if len(parts) != 3 {
		t.Fatalf("%d parts, want 3", len(parts))
	}
	for _, p := range parts {
		rel, _ := filepath.Rel(out, p)
		validate(rel, "sitemap.xsd")
	}
	robots, _ := os.ReadFile(filepath.Join(out, "robots.txt"))
	if !strings.Contains(string(robots), "Sitemap: "+base+publish.PlainSitemapPath+"\n") || strings.Contains(string(robots), "resourcelist.xml") {
		t.Errorf("robots.txt:\n%s", robots)
	}
	readBySitemapper(t, base+publish.PlainSitemapPath, want)

	apply(t, st, "", rs.Deleted, "d/f6&<x>.txt", "", t0.Add(time.Second))
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if parts, _ := filepath.Glob(filepath.Join(out, ".resourcesync/s/sitemap/part-*.xml")); len(parts) != 2 {
		t.Errorf("%d parts after the deletion, want 2", len(parts))
	}
	readBySitemapper(t, base+publish.PlainSitemapPath, want[:6])
}

// readBySitemapper reads the sitemap index at url with npm sitemapper
// 4.1.6 and compares the URLs it found with want.
func readBySitemapper(t *testing.T, url string, want []string) {
	t.Helper()
	dir := npmtest.Dir(t, "sitemapper", "4.1.6")
	script, _ := filepath.Abs("testdata/sitemapper/fetch.mjs")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, "node", script, dir, url).Output()
	if err != nil {
		t.Fatalf("sitemapper: %v\n%s", err, b)
	}
	var res struct {
		Sites  []string
		Errors []any
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("sitemapper output: %v\n%s", err, b)
	}
	slices.Sort(res.Sites)
	w := slices.Clone(want)
	slices.Sort(w)
	if !slices.Equal(res.Sites, w) || len(res.Errors) > 0 {
		t.Errorf("sitemapper read %q (errors %v), want %q", res.Sites, res.Errors, w)
	}
}
