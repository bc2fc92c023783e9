package destination_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
)

// TestDumpPackageGone: a Resource Dump whose package the Source has
// replaced since (404) only costs the dump's head start: the Resource List
// pass brings everything, the run is in sync, and the missing package is a
// warning, not a failure (found by TestModel: exit 1 with DEST in sync).
func TestDumpPackageGone(t *testing.T) {
	files := map[string]string{
		"/capabilitylist.xml": `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="capabilitylist"/>
  <url><loc>{base}resourcelist.xml</loc><rs:md capability="resourcelist"/></url>
  <url><loc>{base}resourcedump.xml</loc><rs:md capability="resourcedump"/></url>
</urlset>`,
		"/resourcelist.xml": resourceList("{base}a.txt"),
		"/a.txt":            "the real a",
		"/resourcedump.xml": `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcedump" at="2026-01-01T00:00:00Z"/>
<url><loc>{base}gone.zip</loc><rs:md type="application/zip" length="123"/></url>
</urlset>`,
	}
	base := staticSource(t, files)
	dest := filepath.Join(t.TempDir(), "dest")
	opt := syncOpts(t, dest)
	var mu sync.Mutex
	var warnings []string
	opt.Events = func(e destination.Event) {
		if e.Kind == destination.EventWarning {
			mu.Lock()
			warnings = append(warnings, e.Message)
			mu.Unlock()
		}
	}
	rep := mustSync(t, base+"capabilitylist.xml", opt)
	sr := one(t, rep)
	if sr.Failed != 0 || !rep.OK(false, false) {
		t.Fatalf("a gone dump package failed the run: %+v", sr)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "a.txt")); err != nil || string(b) != "the real a" {
		t.Fatalf("a.txt = %q, %v", b, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "dump package gone") {
		t.Fatalf("warnings %q, want one about the gone package", warnings)
	}
}
