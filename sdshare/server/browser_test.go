package server

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/browsertest"
)

// TestBrowser opens the feeds in headless Chromium, from the overview down
// to a fragment by clicking: overview → collection → fragments (paged) →
// a fragment's description, and collection → snapshots → chunks → a
// chunk. Every page request stays on the server's origin.
func TestBrowser(t *testing.T) {
	browsertest.Skip(t)
	e := newViewEnv(t)
	u, _ := url.Parse(e.base)
	origin := "http://" + u.Host
	b := browsertest.New(t)

	b.Navigate(t, e.base)
	if got := b.Text(t, "h1"); got != "SDShare collections" {
		t.Fatalf("overview heading %q", got)
	}
	b.Click(t, "a.title") // the one collection
	if got := b.Location(t); got != e.base+"c/" {
		t.Fatalf("collection at %s", got)
	}
	if got := b.Texts(t, "a.title"); !slices.Equal(got, []string{"Snapshots of c", "Fragments of c"}) {
		t.Fatalf("collection entries %q", got)
	}
	b.Screenshot(t, "sdshare-collection")
	b.Phone(t)
	b.Screenshot(t, "sdshare-collection-phone")
	b.Desktop(t)

	// Fragments: three entries a page, each with its description links.
	b.Click(t, `a.title[href$="/fragments"]`)
	if got := b.Location(t); got != e.base+"c/fragments" {
		t.Fatalf("fragments at %s", got)
	}
	ref := e.feed(e.base + "c/fragments")
	var titles []string
	for _, en := range ref.Entries {
		titles = append(titles, en.Titles[0])
	}
	if got := b.Texts(t, "tr.entry .title"); !slices.Equal(got, titles) {
		t.Fatalf("fragments page titles %q, want %q", got, titles)
	}
	if got := b.Texts(t, "tr.entry .tag"); len(got) != len(titles) {
		t.Errorf("change kinds %q", got)
	}
	if n := len(b.Attrs(t, `tr.entry td.links a[type="application/n-triples"]`, "href")); n != len(titles) {
		t.Errorf("%d N-Triples description links for %d entries", n, len(titles))
	}
	b.Screenshot(t, "sdshare-fragments")
	b.Phone(t)
	b.Screenshot(t, "sdshare-fragments-phone")
	b.Desktop(t)

	// The pager pages through the journal; the breadcrumb leads back.
	b.Click(t, `nav.pager a[rel="next"]`)
	if got := b.Location(t); got != ref.next() {
		t.Fatalf("next page at %s, want %s", got, ref.next())
	}
	if got := b.Text(t, "h1"); got != "Fragments of c (continued)" {
		t.Errorf("second page heading %q", got)
	}
	page2 := e.feed(ref.next())
	res := page2.Entries[0].Resources[0]
	b.Click(t, `nav[aria-label="Breadcrumb"] a[href="/sd/c/fragments"]`)
	if got := b.Location(t); got != e.base+"c/fragments" {
		t.Fatalf("breadcrumb led to %s", got)
	}
	// From the keyboard: Enter on the pager's link.
	b.Key(t, `nav.pager a[rel="next"]`, "\r")
	waitFor(t, "Enter on the next link to navigate", func() bool { return b.Location(t) == ref.next() })
	b.Text(t, "tr.entry") // the page has loaded

	// An entry's description (text/plain: Chromium shows it) is the
	// resource's fragment.
	b.Click(t, `tr.entry td.links a[type="text/plain"]`)
	want := e.base + "c/fragment?resource=" + url.QueryEscape(res) + "&format=txt"
	if got := b.Location(t); got != want {
		t.Fatalf("description at %s, want %s", got, want)
	}
	if got := b.Text(t, "body"); !strings.Contains(got, "<"+res+">") {
		t.Errorf("the description does not describe %s:\n%s", res, got)
	}

	// Snapshots → chunks → a chunk.
	b.Navigate(t, e.base+"c/")
	b.Click(t, `a.title[href$="/snapshots"]`)
	b.Click(t, "a.title") // the snapshot's chunked feed
	if got := b.Location(t); !strings.HasSuffix(got, "/chunks") {
		t.Fatalf("chunks at %s", got)
	}
	if got := b.Texts(t, "tr.entry .title"); len(got) != 4 || got[0] != "Chunk 1 of 4" {
		t.Errorf("chunks %q", got)
	}
	if got := b.Texts(t, `nav[aria-label="Breadcrumb"] a`); !slices.Equal(got, []string{"SDShare collections", "Collection c", "Snapshots of c"}) {
		t.Errorf("chunks breadcrumbs %q", got)
	}
	b.Click(t, `tr.entry td.links a[type="text/plain"]`)
	if got := b.Location(t); !strings.Contains(got, "/chunk/0?format=txt") {
		t.Fatalf("chunk at %s", got)
	}
	if got := b.Text(t, "body"); !strings.Contains(got, "<http://ex/") {
		t.Errorf("chunk 0:\n%s", got)
	}
	b.AssertSameOrigin(t, origin)
}
