package publish_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// companions returns the companion files of out and the documents, by
// path relative to out.
func companionFiles(t testing.TB, out string) (html, docs map[string]os.FileInfo) {
	html, docs = map[string]os.FileInfo{}, map[string]os.FileInfo{}
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(out, p)
		rel = filepath.ToSlash(rel)
		fi, _ := d.Info()
		switch {
		case strings.HasSuffix(rel, ".html"):
			html[rel] = fi
		case strings.HasSuffix(rel, ".xml") || rel == ".well-known/resourcesync":
			docs[rel] = fi
		}
		return nil
	})
	return html, docs
}

var hrefRe = regexp.MustCompile(`href="([^"]*)"`)

// TestCompanions: every document gets its HTML page beside it, linked to
// the pages of the documents it names, paged beyond 1,000 entries;
// pages follow their documents (rewritten, removed) and no document
// names one; documents are untouched.
func TestCompanions(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	out, dir := t.TempDir(), t.TempDir()
	st := openStore(t, "")
	fill(t, st, 2500, t0)
	base := server(t, out)
	clk := &clock{t: t0.Add(time.Minute)}
	cfg := publish.Config{BaseURL: base, Out: out, Archives: true, Now: clk.Now, Logger: quiet, MaxEntries: 2200,
		Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "res/"}}}
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	html, docs := companionFiles(t, out)
	for rel, fi := range docs {
		c := strings.TrimSuffix(rel, ".xml") + ".html"
		ci, ok := html[c]
		if !ok {
			t.Errorf("%s has no companion", rel)
			continue
		}
		if !ci.ModTime().Equal(fi.ModTime()) {
			t.Errorf("%s: companion time %v, document %v", rel, ci.ModTime(), fi.ModTime())
		}
	}
	page := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// Links between companions are relative; resources keep their URLs.
	sd := page(".well-known/resourcesync.html")
	if !strings.Contains(sd, `href="../.resourcesync/default/capabilitylist.html"`) {
		t.Errorf("Source Description page does not link the Capability List page:\n%s", sd)
	}
	cl := page(".resourcesync/default/capabilitylist.html")
	for _, want := range []string{`href="resourcelist.html"`, `href="changelist.html"`, `href="../../.well-known/resourcesync.html"`} {
		if !strings.Contains(cl, want) {
			t.Errorf("Capability List page lacks %s", want)
		}
	}
	// A 2,200-entry part: three pages, linked by their names.
	var part string
	for rel := range docs {
		if strings.Contains(rel, "/parts/") && strings.HasSuffix(rel, "-00001.xml") {
			part = strings.TrimSuffix(rel, ".xml")
		}
	}
	p1 := page(part + ".html")
	name := filepath.Base(part)
	for _, want := range []string{`href="` + name + `.2.html" rel="next"`, `href="` + name + `.3.html" rel="last"`, "entries 1–1,000 of 2,200",
		`href="` + base + `res/d000/file-0000000.txt"`, `href="../../resourcelist.html"`} {
		if !strings.Contains(p1, want) {
			t.Errorf("part page 1 lacks %s", want)
		}
	}
	if p3 := page(part + ".3.html"); !strings.Contains(p3, "entries 2,001–2,200 of 2,200") || !strings.Contains(p3, `href="`+name+`.html" rel="first"`) {
		t.Errorf("part page 3 wrong")
	}
	// Every relative link of every page resolves to a file.
	for rel := range html {
		for _, m := range hrefRe.FindAllStringSubmatch(page(rel), -1) {
			h := m[1]
			if strings.HasPrefix(h, "http") || strings.HasPrefix(h, "#") || strings.HasPrefix(h, "?") {
				continue
			}
			target := filepath.Join(out, filepath.Dir(filepath.FromSlash(rel)), filepath.FromSlash(h))
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: link %s to a missing file", rel, h)
			}
		}
	}
	// No document names a companion.
	for rel := range docs {
		if b := page(rel); bytes.Contains([]byte(b), []byte(".html<")) {
			t.Errorf("%s names an HTML file", rel)
		}
	}
	mustWalkClean(t, base)

	// A run that changes nothing rewrites no page: a document rewritten
	// with the same bytes keeps its pages (keyed by its sha-256).
	clk.Set(t0.Add(2 * time.Minute))
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	html2, docs2 := companionFiles(t, out)
	for rel, fi := range html {
		if fi2, ok := html2[rel]; !ok || !os.SameFile(fi, fi2) || !fi2.ModTime().Equal(fi.ModTime()) {
			t.Errorf("%s rewritten by a run that changed nothing", rel)
		}
	}
	if len(html2) != len(html) || len(docs2) != len(docs) {
		t.Errorf("pages %d -> %d, documents %d -> %d", len(html), len(html2), len(docs), len(docs2))
	}
	// Deleting most resources: the list fits one document, the parts and
	// their pages go, the list's page follows.
	for i := 900; i < 2500; i++ {
		apply(t, st, "", rs.Deleted, pathOf(i), "", t0.Add(3*time.Minute))
	}
	clk.Set(t0.Add(4 * time.Minute))
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	html3, docs3 := companionFiles(t, out)
	for rel := range html3 {
		doc := strings.TrimSuffix(rel, ".html")
		doc = regexp.MustCompile(`\.[0-9]+$`).ReplaceAllString(doc, "")
		if _, ok := docs3[doc+".xml"]; !ok {
			if _, ok := docs3[strings.TrimSuffix(rel, ".html")]; !ok {
				t.Errorf("companion %s left without its document", rel)
			}
		}
	}
	for rel := range docs3 {
		c := strings.TrimSuffix(rel, ".xml") + ".html"
		if _, ok := html3[c]; !ok || !strings.HasSuffix(page(c), "sha-256 "+fileSum(t, filepath.Join(out, rel))+" -->\n") {
			t.Errorf("%s: companion missing or stale", rel)
		}
	}
	if rl := page(".resourcesync/default/resourcelist.html"); !strings.Contains(rl, "<h1>Resource List</h1>") || !strings.Contains(rl, "entries 1–900 of 900") && !strings.Contains(rl, "<dd>900</dd>") {
		t.Errorf("resource list page not rewritten")
	}
	if _, err := os.Stat(filepath.Join(out, ".resourcesync/default/resourcelist.2.html")); err == nil {
		t.Error("a page past the last one is left")
	}
	mustWalkClean(t, base)

	// NoCompanions: none written.
	out2 := t.TempDir()
	cfg.Out, cfg.NoCompanions = out2, true
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if h, _ := companionFiles(t, out2); len(h) != 0 {
		t.Errorf("NoCompanions: %d pages", len(h))
	}
}

// fileSum is the sha-256 of the file at path, hex.
func fileSum(t testing.TB, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

func pathOf(i int) string {
	return filepath.ToSlash(filepath.Join("d"+pad(i%1000, 3), "file-"+pad(i, 7)+".txt"))
}

func pad(n, w int) string {
	s := strings.Repeat("0", w) + itoa(n)
	return s[len(s)-w:]
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// BenchmarkCompanions: a first publish of 50,000 resources (a 50,000-entry
// Resource List, a Change List of 50,000 records) with and without
// companions.
func BenchmarkCompanions(b *testing.B) {
	const n = 50000
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	st := openStore(b, "")
	fill(b, st, n, t0)
	for _, no := range []bool{true, false} {
		name := "companions"
		if no {
			name = "none"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				out := b.TempDir()
				b.StartTimer()
				cfg := publish.Config{BaseURL: "http://example.com/", Out: out, Logger: quiet, NoCompanions: no,
					Now:  func() time.Time { return t0.Add(2 * time.Hour) },
					Sets: []publish.Set{{Name: "default", Store: st, ResourceBase: "http://example.com/r/"}}}
				if _, err := publish.Publish(context.Background(), cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
