package destination_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// staticSource serves fixed documents and resources; base is the
// server's URL. Documents may use {base} for it.
func staticSource(t testing.TB, files map[string]string) string {
	t.Helper()
	var base string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.URL.EscapedPath()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.HasSuffix(r.URL.Path, ".xml") || strings.HasSuffix(r.URL.Path, "/resourcesync") {
			w.Header().Set("Content-Type", "application/xml")
		}
		fmt.Fprint(w, strings.ReplaceAll(body, "{base}", base))
	}))
	t.Cleanup(srv.Close)
	base = srv.URL + "/"
	return base
}

const capList = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="capabilitylist"/>
  <url><loc>{base}resourcelist.xml</loc><rs:md capability="resourcelist"/></url>
</urlset>`

func resourceList(locs ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>
`)
	for _, l := range locs {
		fmt.Fprintf(&b, "  <url><loc>%s</loc></url>\n", l)
	}
	b.WriteString("</urlset>")
	return b.String()
}

// TestHostileURIs: resource URIs outside the Source's authority or that
// would map outside DEST are refused with a specific message, never
// fetched, and the rest of the list is synchronized.
func TestHostileURIs(t *testing.T) {
	hostile := map[string]string{
		"http://evil.example/a.txt":      "outside the Source's authority",
		"http://10.0.0.1/a.txt":          "outside the Source's authority",
		"{base}x/../../../etc/passwd":    "would map outside DEST",
		"{base}%2e%2e/%2e%2e/etc/passwd": "would map outside DEST",
		"{base}a%2F..%2F..%2Fescape":     "separator",
		"{base}.resourcesync/state.db":   "maps into the state directory",
		"{base}q.txt?x=1":                "query string",
	}
	locs := []string{"{base}ok.txt"}
	for l := range hostile {
		locs = append(locs, l)
	}
	base := staticSource(t, map[string]string{
		"/capabilitylist.xml": capList,
		"/resourcelist.xml":   resourceList(locs...),
		"/ok.txt":             "fine",
		"/etc/passwd":         "must never be written",
		"/escape":             "must never be written",
	})
	dest := filepath.Join(t.TempDir(), "dest")
	rep := mustSync(t, base+"capabilitylist.xml", syncOpts(t, dest))
	sr := one(t, rep)
	if sr.Fetched != 1 || sr.Failed != len(hostile) {
		t.Fatalf("%+v", sr)
	}
	for _, f := range sr.Failures {
		uri := strings.ReplaceAll(f.URI, base, "{base}")
		want, ok := hostile[uri]
		if !ok {
			t.Errorf("unexpected failure %+v", f)
			continue
		}
		if !strings.Contains(f.Error, want) {
			t.Errorf("%s: error %q, want it to say %q", uri, f.Error, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dest, "ok.txt")); err != nil || string(b) != "fine" {
		t.Fatalf("ok.txt: %q %v", b, err)
	}
	for _, p := range []string{filepath.Join(filepath.Dir(dest), "etc"), filepath.Join(filepath.Dir(dest), "escape")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s written outside DEST", p)
		}
	}
	if rep.OK(false, false) {
		t.Error("a run with refused resources reported OK")
	}
}
