package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/browsertest"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// TestBrowserNavigationOnly: in a real Chromium, navigating to the base
// URL leads to the status page and to a document shows its page, while
// the same browser's XMLHttpRequest of the document (even one asking for
// text/html) gets the XML: only a navigation gets HTML.
func TestBrowserNavigationOnly(t *testing.T) {
	b := browsertest.New(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "page.html"), []byte("<!DOCTYPE html><title>p</title><p>a page of the collection</p>"), 0o644)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	st := scannedStore(t, dir)
	docs := t.TempDir()
	status := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!DOCTYPE html><title>s</title><h1>Status</h1>")
	})
	srv := httptest.NewServer(&Handler{Docs: docs, Mount: "/", Status: status, Sets: []Set{{Prefix: "/", Dir: dir, Store: st}}})
	t.Cleanup(srv.Close)
	base := srv.URL + "/"
	if _, err := publish.Publish(context.Background(), publish.Config{BaseURL: base, Out: docs, NoCompanions: true,
		Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base}}}); err != nil {
		t.Fatal(err)
	}

	b.Navigate(t, base)
	if loc, h1 := b.Location(t), b.Text(t, "h1"); loc != base+".resourcesync/" || h1 != "Status" {
		t.Errorf("the base URL in a browser: at %s, h1 %q", loc, h1)
	}
	b.Navigate(t, base+".well-known/resourcesync")
	if h1 := b.Text(t, "h1"); h1 != "Source Description" {
		t.Errorf("a document in a browser: h1 %q", h1)
	}
	// A page of the collection (no CSP: SandboxResources is off) whose
	// script asks for the documents.
	b.Navigate(t, base+"page.html")
	for _, c := range []struct{ doc, accept string }{
		{".well-known/resourcesync", ""},
		{".resourcesync/default/capabilitylist.xml", ""},
		{".resourcesync/default/resourcelist.xml", "text/html"},
	} {
		got := browsertest.Eval[string](t, b, `(() => { const x = new XMLHttpRequest(); x.open("GET", `+"`"+base+c.doc+"`"+`, false);
			if (`+"`"+c.accept+"`"+`) x.setRequestHeader("Accept", `+"`"+c.accept+"`"+`);
			x.send(); return x.status + " " + x.getResponseHeader("Content-Type") + " " + x.responseText.slice(0, 5) })()`)
		if got != "200 application/xml <?xml" {
			t.Errorf("XMLHttpRequest of %s (Accept %q): %q", c.doc, c.accept, got)
		}
	}
	b.AssertSameOrigin(t, srv.URL)
}
