package destination_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSourceDocumentsNotResources: a hostile Source whose Resource List
// lists the Capability List, the Resource List itself and the Source
// Description must not get them installed in DEST as resources (a
// Destination serving DEST would then publish documents the Source chose,
// or have its own overwritten); each is a failure that says why, and the
// other resources still land.
func TestSourceDocumentsNotResources(t *testing.T) {
	docs := []string{
		"{base}capabilitylist.xml",
		"{base}resourcelist.xml",
		"{base}.well-known/resourcesync",
		"{base}%63apabilitylist.xml", // another spelling of the same URI
		"{base}sd.xml",
	}
	sd := `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="description"/>
  <url><loc>{base}capabilitylist.xml</loc><rs:md capability="capabilitylist"/></url>
</urlset>`
	base := staticSource(t, map[string]string{
		"/.well-known/resourcesync": sd,
		"/sd.xml":                   sd,
		"/capabilitylist.xml":       capList,
		"/resourcelist.xml":         resourceList(append([]string{"{base}ok.txt", "{base}sub/ok2.txt"}, docs...)...),
		"/ok.txt":                   "fine",
		"/sub/ok2.txt":              "fine too",
	})
	// From the base, the Source Description read is the well-known one,
	// and sd.xml is only a file of the Source like any other.
	for _, c := range []struct {
		source  string
		refused int
	}{{base, len(docs) - 1}, {base + "sd.xml", len(docs)}} {
		source := c.source
		dest := filepath.Join(t.TempDir(), "dest")
		rep := mustSync(t, source, syncOpts(t, dest))
		sr := one(t, rep)
		if sr.Fetched != 2+len(docs)-c.refused || sr.Failed != c.refused {
			t.Fatalf("%s: %+v", source, sr)
		}
		for _, f := range sr.Failures {
			if !strings.Contains(f.Error, "a document of the Source, not a resource") {
				t.Errorf("%s: failure %+v does not say it is a document of the Source", source, f)
			}
		}
		for _, p := range []string{"ok.txt", "sub/ok2.txt"} {
			if _, err := os.Stat(filepath.Join(dest, p)); err != nil {
				t.Errorf("%s: %s not installed: %v", source, p, err)
			}
		}
		for _, p := range []string{"capabilitylist.xml", "resourcelist.xml", ".well-known", "sd.xml"}[:c.refused-1] { // sd.xml only when read
			if _, err := os.Lstat(filepath.Join(dest, p)); err == nil {
				t.Errorf("%s: the Source's document %s was installed in DEST", source, p)
			}
		}
		if rep.OK(false, false) {
			t.Errorf("%s: a run with refused resources reported OK", source)
		}
	}
}
