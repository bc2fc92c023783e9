package server

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/xsdtest"

	"github.com/resourcesync-go/resourcesync/internal/testing/browsertest"
	"github.com/resourcesync-go/resourcesync/internal/web"
)

// rsDocs starts a view env with the ResourceSync view and returns the URLs
// of every document, from the Source Description down, once a Change List
// holds the changes.
func rsDocs(t *testing.T) (*env, []string) {
	t.Helper()
	e := newEnv(t, map[string]string{"data.nt": viewData(10, 1)}, func(c *Config) { c.ResourceSync = true })
	e.write("data.nt", viewData(12, 2))
	var docs []string
	waitFor(t, "a Change List with the changes", func() bool {
		docs = docs[:0]
		seen := map[string]bool{}
		queue := []string{e.base + ".well-known/resourcesync"}
		changed := false
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			if seen[u] {
				continue
			}
			seen[u] = true
			resp, body := e.get(u)
			if resp.StatusCode != 200 {
				return false
			}
			docs = append(docs, u)
			changed = changed || bytes.Contains(body, []byte(`change="created"`))
			for _, m := range locRE.FindAllStringSubmatch(string(body), -1) {
				if strings.HasPrefix(m[1], e.base+".resourcesync/") && strings.HasSuffix(m[1], ".xml") {
					queue = append(queue, m[1])
				}
			}
		}
		return changed
	})
	return e, docs
}

// TestResourceSyncDocsNegotiation: with the ResourceSync view, every
// document answers machine clients its XML byte for byte (valid against
// the sitemaps.org and ResourceSync XSDs) and a browser its HTML view
// (package docview) whose links lead to the same URLs, below the base;
// both with the same Vary (web.VaryHTML). No HTML companions are written: the server
// negotiates.
func TestResourceSyncDocsNegotiation(t *testing.T) {
	e, docs := rsDocs(t)
	if len(docs) < 4 {
		t.Fatalf("documents %q", docs)
	}
	t.Logf("%d documents: %q", len(docs), docs)
	xsd := xsdtest.New(t, "../..")
	for _, u := range docs {
		_, want := e.get(u)
		if bytes.Contains(want, []byte("<url>")) || bytes.Contains(want, []byte("<sitemap>")) {
			if err := xsd.Validate(u, want); err != nil {
				t.Error(err)
			}
		}
		for _, a := range machineAccepts {
			resp, body := e.get(u, "Accept", a)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/xml" || !hasVaryHTML(resp.Header) {
				t.Errorf("%s, Accept %q: %s %v", u, a, resp.Status, resp.Header)
			}
			if !bytes.Equal(body, want) {
				t.Errorf("%s, Accept %q: the XML differs from the one without Accept", u, a)
			}
		}
		for _, a := range browserAccepts {
			resp, body := e.get(u, nav(a)...)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
				!hasVaryHTML(resp.Header) || resp.Header.Get("Content-Security-Policy") != web.CSP {
				t.Errorf("%s, Accept %q: %s %v", u, a, resp.Status, resp.Header)
			}
			hrefs := pageHrefs(t, string(body))
			for _, m := range locRE.FindAllStringSubmatch(string(want), -1) {
				if !slices.Contains(hrefs, localPath(e, m[1])) {
					t.Errorf("%s: <loc> %s is no link on the page", u, m[1])
				}
			}
		}
	}
	filepath.WalkDir(e.srv.rsOut(), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".html") {
			t.Errorf("companion written: %s", p)
		}
		return nil
	})
}

// TestBrowserResourceSync: with the ResourceSync view, a browser goes from
// the Source Description down to a Resource List's resources (the
// fragments) by clicking, and to a Change List; every request stays on
// the origin.
func TestBrowserResourceSync(t *testing.T) {
	browsertest.Skip(t)
	e, _ := rsDocs(t)
	b := browsertest.New(t)
	b.Navigate(t, e.base+".well-known/resourcesync")
	b.Click(t, `td.url a[href$="/capabilitylist.xml"]`)
	if got := b.Location(t); got != e.base+".resourcesync/c/capabilitylist.xml" {
		t.Fatalf("capability list at %s", got)
	}
	b.Click(t, `td.url a[href$="/resourcelist.xml"]`)
	res := b.Attrs(t, "td.url a", "href")
	if len(res) != 14 || !strings.HasPrefix(res[0], e.base+"c/rs/") {
		t.Fatalf("resource list links %q", res)
	}
	b.Navigate(t, e.base+".resourcesync/c/capabilitylist.xml")
	b.Click(t, `td.url a[href$="/changelist.xml"]`)
	b.Click(t, `td.url a[href*="/changelists/"]`)
	if got := b.Texts(t, "td .tag.created"); len(got) != 2 {
		t.Errorf("created tags %q, want 2", got)
	}
	b.Screenshot(t, "sdshare-resourcesync-changelist")
	b.AssertSameOrigin(t, strings.TrimSuffix(e.base, "/sd/"))
}
