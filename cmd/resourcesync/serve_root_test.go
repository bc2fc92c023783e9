package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/internal/testing/webtest"
)

// TestServeRoot: `serve`'s base URL. Without an index.html a browser's
// navigation is sent to the status page and Java's HttpURLConnection gets
// 404 naming the Source Description; with one, every client gets it. Both
// ways `validate` and `sync` given the base URL discover the Source.
func TestServeRoot(t *testing.T) {
	c, _ := testnet.Client(t)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	var java, chromium webtest.Client
	for _, cl := range webtest.Clients {
		switch cl.Name {
		case "Java 8 HttpURLConnection":
			java = cl
		case "Chromium navigation":
			chromium = cl
		}
	}
	get := func(u string, cl webtest.Client) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", u, nil)
		cl.Set(req)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, index := range []bool{false, true} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
		if index {
			os.WriteFile(filepath.Join(dir, "index.html"), []byte("<p>welcome</p>"), 0o644)
		}
		base, _ := startServe(t, dir)
		if index {
			for _, cl := range []webtest.Client{java, chromium} {
				if resp, body := get(base, cl); resp.StatusCode != 200 || body != "<p>welcome</p>" {
					t.Errorf("index.html, %s: %s %q", cl.Name, resp.Status, body)
				}
			}
		} else {
			resp, _ := get(base, chromium)
			if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != "/.resourcesync/" {
				t.Fatalf("a browser at the base URL: %s, Location %q", resp.Status, loc)
			}
			if resp, body := get(base+".resourcesync/", chromium); resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "<h1>") {
				t.Errorf("the status page: %s %s", resp.Status, resp.Header.Get("Content-Type"))
			}
			if resp, body := get(base, java); resp.StatusCode != 404 || !strings.Contains(body, "/.well-known/resourcesync") {
				t.Errorf("Java at the base URL: %s %q", resp.Status, body)
			}
		}
		if code, out, errOut := runCLI(t, "validate", base); code != 0 {
			t.Errorf("index.html %v: validate of the base URL: exit %d\n%s\n%s", index, code, out, errOut)
		}
		dest := t.TempDir()
		if code, out, errOut := runCLI(t, "sync", base, dest); code != 0 {
			t.Errorf("index.html %v: sync of the base URL: exit %d\n%s\n%s", index, code, out, errOut)
		}
		if b, err := os.ReadFile(filepath.Join(dest, "a.txt")); err != nil || string(b) != "a" {
			t.Errorf("index.html %v: a.txt not mirrored: %v", index, err)
		}
		if _, err := os.Stat(filepath.Join(dest, "index.html")); (err == nil) != index {
			t.Errorf("index.html %v: mirrored index.html: %v", index, err)
		}
	}
}

// TestServeRootIndexLinks: DIR's index.html, served at the base URL to
// every client, is the publisher's web page; a <link rel="resourcesync">
// in it (a copied site's, a stale one) must not take `sync` and
// `validate` given the base URL to another Capability List than the
// Source's: the base URL's Link header names the Source Description,
// which discovery reads before the page's <link> elements.
func TestServeRootIndexLinks(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	base := "http://" + addr + "/"
	write := func(name, body string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "a")
	write("b.txt", "b")
	write("index.html", `<html><head><link rel="resourcesync" href="/decoy/capabilitylist.xml"></head><body>welcome</body></html>`)
	const ns = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"`
	write("decoy/capabilitylist.xml", `<?xml version="1.0"?><urlset `+ns+`><rs:md capability="capabilitylist"/>`+
		`<url><loc>`+base+`decoy/resourcelist.xml</loc><rs:md capability="resourcelist"/></url></urlset>`)
	write("decoy/resourcelist.xml", `<?xml version="1.0"?><urlset `+ns+`><rs:md capability="resourcelist" at="2020-01-01T00:00:00Z"/>`+
		`<url><loc>`+base+`a.txt</loc></url></urlset>`)
	out, _ := background(t, "serve", "--addr", addr, "--rescan-interval", "0", "--no-hub", "--state", t.TempDir(), dir)
	waitFor(t, "serve", 120*time.Second, func() bool { return strings.Contains(out.String(), "serving ") })
	dest := t.TempDir()
	if code, out, errOut := runCLI(t, "sync", "--progress", "quiet", base, dest); code != 0 {
		t.Fatalf("sync of the base URL: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, name := range []string{"a.txt", "b.txt", "index.html", "decoy/resourcelist.xml"} {
		if _, err := os.Stat(filepath.Join(dest, name)); err != nil {
			t.Errorf("%s not mirrored (the index.html's <link> was followed?): %v", name, err)
		}
	}
	if code, out, errOut := runCLI(t, "validate", base); code != 0 || strings.Contains(out, "decoy") {
		t.Errorf("validate of the base URL: exit %d\n%s\n%s", code, out, errOut)
	}
}
