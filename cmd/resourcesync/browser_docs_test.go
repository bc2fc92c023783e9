package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/browsertest"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/internal/testing/webtest"
	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/rs"
)

const chromeAccept = webtest.AcceptChromium

// startServe runs `resourcesync serve` on dir over loopback and returns
// its base URL and its document tree.
func startServe(t *testing.T, dir string, args ...string) (base, docs string) {
	t.Helper()
	addr := freeAddr(t)
	state := t.TempDir()
	all := append([]string{"serve", "--addr", addr, "--rescan-interval", "0", "--no-hub", "--state", state}, args...)
	out, _ := background(t, append(all, dir)...)
	waitFor(t, "serve", 120*time.Second, func() bool { return strings.Contains(out.String(), "serving ") })
	return "http://" + addr + "/", filepath.Join(state, "docs")
}

// fetchDoc GETs url with an Accept header (none when empty).
func fetchDoc(t *testing.T, c *http.Client, url, accept string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// locs decodes the entries' locs of a document.
func locs(t *testing.T, doc []byte) (*rs.Head, []string) {
	t.Helper()
	dec := rs.NewDecoder(bytes.NewReader(doc))
	h, err := dec.Head()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for e, err := range dec.All() {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Loc)
	}
	return h, out
}

// checkEntriesAreLinks opens url in the browser and checks that the
// view's entries are the document's, each a link to its loc.
func checkEntriesAreLinks(t *testing.T, b *browsertest.Browser, c *http.Client, url, kind string) {
	t.Helper()
	_, xml := fetchDoc(t, c, url, "")
	_, want := locs(t, xml)
	b.Navigate(t, url)
	if h1 := b.Text(t, "h1"); h1 != kind {
		t.Errorf("%s: h1 %q, want %q", url, h1, kind)
	}
	got := b.Attrs(t, "td.url a", "href")
	if len(want) > 1000 {
		want = want[:1000]
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d entry links, want %d", url, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: entry %d links %s, want %s", url, i+1, got[i], want[i])
		}
	}
}

// TestBrowserDocs: a browser reading `serve`'s documents: each kind
// renders its entries as links; from the Source Description down to a
// resource by clicking; the Change List tags its changes; machine clients
// still get the XML byte for byte, and sync and validate work against the
// same server.
func TestBrowserDocs(t *testing.T) {
	b := browsertest.New(t)
	syncLoopbackOnly(t)
	loopbackOnly(t)
	dir := t.TempDir()
	for i := range 12 {
		p := filepath.Join(dir, fmt.Sprintf("dir %d", i%3), fmt.Sprintf("file-%02d.txt", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("resource %d\n", i)), 0o644)
	}
	base, docs := startServe(t, dir, "--watch", "--debounce", "20ms", "--dump-interval", "1h")
	origin := strings.TrimSuffix(base, "/")
	c, _ := testnet.Client(t)

	// Changes, so that the Change List has created, updated and deleted.
	time.Sleep(50 * time.Millisecond)
	os.WriteFile(filepath.Join(dir, "dir 0", "file-00.txt"), []byte("changed\n"), 0o644)
	os.Remove(filepath.Join(dir, "dir 1", "file-01.txt"))
	os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new\n"), 0o644)
	var openList string
	waitFor(t, "the changes in a Change List", 20*time.Second, func() bool {
		_, idx := fetchDoc(t, c, base+".resourcesync/default/changelist.xml", "")
		_, ls := locs(t, idx)
		if len(ls) == 0 {
			return false
		}
		openList = ls[len(ls)-1]
		_, cl := fetchDoc(t, c, openList, "")
		return bytes.Contains(cl, []byte(`change="deleted"`)) && bytes.Contains(cl, []byte(`change="created"`)) && bytes.Contains(cl, []byte(`change="updated"`))
	})

	// Down from the Source Description by clicking.
	b.Navigate(t, base+".well-known/resourcesync")
	if h := b.Text(t, "h1"); h != "Source Description" {
		t.Fatalf("h1 %q", h)
	}
	b.Click(t, "td.url a")
	if h := b.Text(t, "h1"); h != "Capability List" {
		t.Fatalf("after a click on the Source Description's entry: h1 %q", h)
	}
	if loc := b.Location(t); loc != base+".resourcesync/default/capabilitylist.xml" {
		t.Errorf("location %s", loc)
	}
	b.Screenshot(t, "docs-capabilitylist")
	if crumbs := b.Texts(t, "header nav li"); len(crumbs) < 2 || crumbs[0] != "Source Description" {
		t.Errorf("breadcrumbs %q", crumbs)
	}
	b.Click(t, `td.url a[href$="/resourcelist.xml"]`)
	if h := b.Text(t, "h1"); h != "Resource List" {
		t.Fatalf("h1 %q", h)
	}
	b.Screenshot(t, "docs-resourcelist")
	b.Phone(t)
	b.Navigate(t, b.Location(t))
	b.Screenshot(t, "docs-resourcelist-phone")
	// Readable on a phone: the table scrolls inside its box, the page
	// does not.
	if w := browsertest.Eval[float64](t, b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); w > 1 {
		wide := browsertest.Eval[[]string](t, b, `Array.from(document.querySelectorAll("body *")).filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && !e.closest(".scroll")).map(e => e.tagName + "." + e.className)`)
		t.Errorf("the page scrolls sideways on a phone by %v px: %v", w, wide)
	}
	b.Desktop(t)
	b.Navigate(t, b.Location(t))
	b.Click(t, `td.url a[href$="/file-03.txt"]`)
	if body := strings.TrimSpace(b.Text(t, "body")); body != "resource 3" {
		t.Errorf("the resource's page shows %q", body)
	}
	// Up again with the breadcrumbs: Resource List → Capability List.
	b.Navigate(t, base+".resourcesync/default/resourcelist.xml")
	b.Click(t, `header nav a[href$="capabilitylist.xml"]`)
	if h := b.Text(t, "h1"); h != "Capability List" {
		t.Errorf("breadcrumb led to %q", h)
	}

	// The Change List: change types as tags, from/until shown.
	b.Navigate(t, base+".resourcesync/default/changelist.xml")
	if h := b.Text(t, "h1"); h != "Change List Index" {
		t.Fatalf("h1 %q", h)
	}
	b.Click(t, fmt.Sprintf(`td.url a[href=%q]`, openList))
	if h := b.Text(t, "h1"); h != "Change List" {
		t.Fatalf("h1 %q", h)
	}
	tags := strings.Join(b.Texts(t, "td span.tag"), " ")
	for _, c := range []string{"created", "updated", "deleted"} {
		if !strings.Contains(tags, c) {
			t.Errorf("no %s tag in the Change List: %s", c, tags)
		}
	}
	if facts := b.Text(t, "dl.facts"); !strings.Contains(facts, "from") {
		t.Errorf("no from in %q", facts)
	}
	b.Screenshot(t, "docs-changelist")

	// Every document of the tree: its entries are links.
	kinds := map[string]string{
		".well-known/resourcesync":                       "Source Description",
		".resourcesync/default/capabilitylist.xml":       "Capability List",
		".resourcesync/default/resourcelist.xml":         "Resource List",
		".resourcesync/default/changelist.xml":           "Change List Index",
		".resourcesync/default/resourcelist-archive.xml": "Resource List Archive",
		".resourcesync/default/changelist-archive.xml":   "Change List Archive",
	}
	for rel, kind := range kinds {
		checkEntriesAreLinks(t, b, c, base+rel, kind)
	}
	checkEntriesAreLinks(t, b, c, openList, "Change List")
	// The Resource Dump: its packages, and their manifests (rel="contents").
	checkEntriesAreLinks(t, b, c, base+".resourcesync/default/resourcedump.xml", "Resource Dump")
	b.Click(t, `td a[href$=".manifest.xml"]`)
	if h := b.Text(t, "h1"); h != "Resource Dump Manifest" {
		t.Errorf("the contents link of a dump package led to %q", h)
	}
	checkEntriesAreLinks(t, b, c, b.Location(t), "Resource Dump Manifest")

	// Machine clients: the XML as it is on disk (decoded, for a
	// Resource List stored compressed: NAME.xml.gz answers NAME.xml).
	filepath.WalkDir(docs, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".xml") || strings.HasSuffix(p, ".xml.gz") || strings.HasSuffix(p, "resourcesync")) {
			return nil
		}
		rel, _ := filepath.Rel(docs, strings.TrimSuffix(p, ".gz"))
		file, _ := os.ReadFile(p)
		if strings.HasSuffix(p, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(file))
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			file, _ = io.ReadAll(zr)
		}
		for _, accept := range []string{"", "*/*", "application/xml", "text/xml", "application/xml, text/xml;q=0.9, */*;q=0.1",
			webtest.AcceptJava8, webtest.AcceptJava17, chromeAccept} {
			resp, body := fetchDoc(t, c, base+filepath.ToSlash(rel), accept)
			if !bytes.Equal(body, file) || resp.Header.Get("Content-Type") != "application/xml" || resp.Header.Get("Vary") != web.VaryHTML {
				t.Errorf("%s with Accept %q: not the file's bytes (%s, Vary %q)", rel, accept, resp.Header.Get("Content-Type"), resp.Header.Get("Vary"))
			}
		}
		// ?format=html asks for the page without a navigation.
		resp, _ := fetchDoc(t, c, base+filepath.ToSlash(rel)+"?format=html", chromeAccept)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: a browser gets %s", rel, resp.Header.Get("Content-Type"))
		}
		return nil
	})

	// sync and validate against the same server.
	if code, out, errOut := runCLI(t, "validate", base); code != 0 {
		t.Errorf("validate: exit %d\n%s\n%s", code, out, errOut)
	}
	dest := t.TempDir()
	if code, out, errOut := runCLI(t, "sync", base, dest); code != 0 {
		t.Fatalf("sync: exit %d\n%s\n%s", code, out, errOut)
	}
	if got, err := os.ReadFile(filepath.Join(dest, "dir 0", "file-03.txt")); err != nil || string(got) != "resource 3\n" {
		t.Errorf("sync copied %q, %v", got, err)
	}
	b.AssertSameOrigin(t, origin)
}

// TestBrowserDocsLarge: a Resource List of 50,001 resources is an index of
// two parts; clicking leads from the Source Description through the index
// to the 50,000-entry part, which pages (1,000 entries a page), and to a
// resource's bytes.
func TestBrowserDocsLarge(t *testing.T) {
	b := browsertest.New(t)
	loopbackOnly(t)
	const n = 50001
	dir := t.TempDir()
	start := time.Now()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%03d", i/500), fmt.Sprintf("f%05d", i))
		if i%500 == 0 {
			os.MkdirAll(filepath.Dir(p), 0o755)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base, _ := startServe(t, dir, "--no-dumps")
	t.Logf("%d files written and served in %v", n, time.Since(start))

	b.Navigate(t, base+".well-known/resourcesync")
	b.Click(t, "td.url a")
	b.Click(t, `td.url a[href$="/resourcelist.xml"]`)
	if h := b.Text(t, "h1"); h != "Resource List Index" {
		c, _ := testnet.Client(t)
		_, xml := fetchDoc(t, c, base+".resourcesync/default/resourcelist.xml", "")
		_, ls := locs(t, xml)
		t.Fatalf("h1 %q; %d entries; %.300s", h, len(ls), xml)
	}
	parts := b.Attrs(t, "td.url a", "href")
	if len(parts) != 2 {
		t.Fatalf("%d parts", len(parts))
	}
	b.Click(t, "td.url a")
	if h, title := b.Text(t, "h1"), browsertest.Eval[string](t, b, "document.title"); h != "Resource List" || title != "Resource List (page 1 of 50)" {
		t.Fatalf("h1 %q, title %q", h, title)
	}
	if p := b.Text(t, "nav.pager span"); p != "entries 1–1,000 of 50,000" {
		t.Errorf("pager %q", p)
	}
	if got := len(b.Attrs(t, "td.url a", "href")); got != 1000 {
		t.Errorf("%d entries on page 1", got)
	}
	if crumbs := b.Texts(t, "header nav li"); strings.Join(crumbs, "/") != "Source Description/Capability List/Resource List Index/Resource List (page 1 of 50)" {
		t.Errorf("breadcrumbs %q", crumbs)
	}
	b.Click(t, `nav.pager a[rel="next"]`)
	if p := b.Text(t, "nav.pager span"); p != "entries 1,001–2,000 of 50,000" {
		t.Errorf("page 2: pager %q", p)
	}
	b.Click(t, `nav.pager a[rel="last"]`)
	if p := b.Text(t, "nav.pager span"); p != "entries 49,001–50,000 of 50,000" {
		t.Errorf("last page: pager %q", p)
	}
	if !strings.HasSuffix(b.Location(t), "?page=50") {
		t.Errorf("last page at %s", b.Location(t))
	}
	href := b.Attrs(t, "td.url a", "href")[999]
	b.Click(t, "tbody tr:last-child td.url a")
	if loc := b.Location(t); loc != href {
		t.Errorf("clicked to %s, want %s", loc, href)
	}
	name := href[strings.LastIndexByte(href, '/')+2:]
	if body := strings.TrimSpace(b.Text(t, "body")); strings.TrimLeft(name, "0") != body && !(name == "00000" && body == "0") {
		t.Errorf("resource %s shows %q", name, body)
	}
	b.AssertSameOrigin(t, strings.TrimSuffix(base, "/"))
}

// TestBrowserDocsStatic: `publish` writes an HTML companion beside each
// document; a plain file server hosts the tree, and a browser clicks from
// the Capability List's page to the Resource List's and on to a resource.
func TestBrowserDocsStatic(t *testing.T) {
	b := browsertest.New(t)
	dir, out := t.TempDir(), t.TempDir()
	for i := range 5 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("r%d.txt", i)), []byte(fmt.Sprint("static ", i)), 0o644)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	if code, o, e := runCLI(t, "publish", "--base-url", base, "--out", out, "--state", t.TempDir(), "--no-dumps", dir); code != 0 {
		t.Fatalf("publish: %d\n%s\n%s", code, o, e)
	}
	docs, files := http.FileServer(http.Dir(out)), http.FileServer(http.Dir(dir))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.resourcesync/") || strings.HasPrefix(r.URL.Path, "/.well-known/") {
			docs.ServeHTTP(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	b.Navigate(t, base+".well-known/resourcesync.html")
	if h := b.Text(t, "h1"); h != "Source Description" {
		t.Fatalf("h1 %q", h)
	}
	b.Click(t, "td.url a")
	if loc := b.Location(t); loc != base+".resourcesync/default/capabilitylist.html" {
		t.Fatalf("at %s", loc)
	}
	b.Click(t, `td.url a[href$="resourcelist.html"]`)
	if h := b.Text(t, "h1"); h != "Resource List" {
		t.Fatalf("h1 %q", h)
	}
	if loc := b.Location(t); loc != base+".resourcesync/default/resourcelist.html" {
		t.Errorf("at %s", loc)
	}
	b.Click(t, `td.url a[href$="/r3.txt"]`)
	if body := strings.TrimSpace(b.Text(t, "body")); body != "static 3" {
		t.Errorf("resource shows %q", body)
	}
	b.Navigate(t, base+".resourcesync/default/resourcelist.html")
	b.Click(t, `header nav a[href$="capabilitylist.html"]`)
	if h := b.Text(t, "h1"); h != "Capability List" {
		t.Errorf("breadcrumb led to %q", h)
	}
	b.AssertSameOrigin(t, strings.TrimSuffix(base, "/"))
}
