package atomview

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/sdshare"
	"github.com/resourcesync-go/resourcesync/sdshare/atom"
)

const base = "http://127.0.0.1:8080/sd/"

var t0 = time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC)

func pair(rel, typ, href string) []atom.Link {
	return []atom.Link{{Rel: rel, Type: typ, Href: href}, {Rel: "alternate", Type: typ, Href: href}}
}

func dataLinks(rel, href string) []atom.Link {
	var out []atom.Link
	for _, t := range []string{"application/n-triples", "text/plain", "text/turtle", "application/rdf+xml"} {
		out = append(out, pair(rel, t, href+"?format="+t[strings.LastIndex(t, "/")+1:])...)
	}
	return out
}

func feed(title string, links []atom.Link, es ...atom.Entry) *atom.Feed {
	return &atom.Feed{ID: base + "x", Title: title, Updated: t0, Author: "a",
		Links: append([]atom.Link{{Rel: "self", Type: sdshare.AtomType, Href: base + "x"}}, links...), Entries: es}
}

// anchor is an <a> of a page.
type anchor struct {
	Href, Text, Class, Rel, Type string
}

// anchors reads a page leniently (as HTML: void elements, entities) and
// returns its links.
func anchors(t *testing.T, page string) []anchor {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(page))
	d.Strict, d.AutoClose, d.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	var out []anchor
	var cur *anchor
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("page does not parse: %v\n%s", err, page)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if tok.Name.Local == "a" {
				out = append(out, anchor{})
				cur = &out[len(out)-1]
				for _, a := range tok.Attr {
					switch a.Name.Local {
					case "href":
						cur.Href = a.Value
					case "class":
						cur.Class = a.Value
					case "rel":
						cur.Rel = a.Value
					case "type":
						cur.Type = a.Value
					}
				}
			}
		case xml.EndElement:
			if tok.Name.Local == "a" {
				cur = nil
			}
		case xml.CharData:
			if cur != nil {
				cur.Text += string(tok)
			}
		}
	}
}

func render(t *testing.T, f *atom.Feed, o Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, f, o); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func hrefs(as []anchor, pred func(anchor) bool) []string {
	var out []string
	for _, a := range as {
		if pred(a) {
			out = append(out, a.Href)
		}
	}
	return out
}

// TestKinds: each kind of feed the server writes renders its entries as
// links: an entry's title leads to the feed it announces (or, for data,
// to its text/plain form, which a browser shows), every data link
// is a link with its type, paging links become a pager; links below the
// base are root-relative.
func TestKinds(t *testing.T) {
	col := base + "c/"
	for _, c := range []struct {
		name   string
		f      *atom.Feed
		titles []string // hrefs of the entry titles
		typed  []string // hrefs of the links with a type, in the links cells
		pager  []string
	}{
		{"overview", feed("SDShare collections", nil,
			atom.Entry{ID: col, Title: "c", Updated: t0, Links: pair(sdshare.RelCollectionFeed, sdshare.AtomType, col)}),
			[]string{"/sd/c/"}, []string{"/sd/c/"}, nil},
		{"collection", feed("Collection c", nil,
			atom.Entry{ID: col + "snapshots", Title: "Snapshots of c", Updated: t0, Links: pair(sdshare.RelSnapshotsFeed, sdshare.AtomType, col+"snapshots")},
			atom.Entry{ID: col + "fragments", Title: "Fragments of c", Updated: t0, Links: pair(sdshare.RelFragmentsFeed, sdshare.AtomType, col+"fragments")}),
			[]string{"/sd/c/snapshots", "/sd/c/fragments"}, []string{"/sd/c/snapshots", "/sd/c/fragments"}, nil},
		{"snapshots", feed("Snapshots of c", nil,
			atom.Entry{ID: col + "snapshot/1-abc", Title: "Snapshot", Updated: t0,
				Links: append(dataLinks(sdshare.RelSnapshot, col+"snapshot/1-abc"), pair(sdshare.RelChunkedSnapshot, sdshare.AtomType, col+"snapshot/1-abc/chunks")...)}),
			[]string{"/sd/c/snapshot/1-abc/chunks"}, []string{
				"/sd/c/snapshot/1-abc?format=n-triples", "/sd/c/snapshot/1-abc?format=plain", "/sd/c/snapshot/1-abc?format=turtle",
				"/sd/c/snapshot/1-abc?format=rdf+xml", "/sd/c/snapshot/1-abc/chunks"}, nil},
		{"chunks", feed("Chunks", nil,
			atom.Entry{ID: col + "snapshot/1-abc/chunk/0", Title: "Chunk 1 of 1", Updated: t0, Links: dataLinks(sdshare.RelSnapshotComponent, col+"snapshot/1-abc/chunk/0")}),
			[]string{"/sd/c/snapshot/1-abc/chunk/0?format=plain"}, []string{"/sd/c/snapshot/1-abc/chunk/0?format=n-triples", "/sd/c/snapshot/1-abc/chunk/0?format=plain",
				"/sd/c/snapshot/1-abc/chunk/0?format=turtle", "/sd/c/snapshot/1-abc/chunk/0?format=rdf+xml"}, nil},
		{"fragments", feed("Fragments of c", []atom.Link{{Rel: "next", Type: sdshare.AtomType, Href: col + "fragments?page=s5"}},
			atom.Entry{ID: col + "changes/1.1", Title: "Alpha", Updated: t0, Summary: "created",
				Links: dataLinks(sdshare.RelFragment, col+"fragment?resource=http%3A%2F%2Fex%2Fa"), Resources: []string{"http://ex/a"}}),
			[]string{"/sd/c/fragment?resource=http%3A%2F%2Fex%2Fa?format=plain"}, []string{"/sd/c/fragment?resource=http%3A%2F%2Fex%2Fa?format=n-triples", "/sd/c/fragment?resource=http%3A%2F%2Fex%2Fa?format=plain",
				"/sd/c/fragment?resource=http%3A%2F%2Fex%2Fa?format=turtle", "/sd/c/fragment?resource=http%3A%2F%2Fex%2Fa?format=rdf+xml"},
			[]string{"/sd/c/fragments?page=s5"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			page := render(t, c.f, Options{Base: base, Crumbs: []web.Link{{Href: "/sd/", Text: "SDShare collections"}}})
			as := anchors(t, page)
			if got := hrefs(as, func(a anchor) bool { return a.Class == "title" }); !slices.Equal(got, c.titles) {
				t.Errorf("entry title links %q, want %q", got, c.titles)
			}
			var typed []string
			_, rows, _ := strings.Cut(page, "<tbody>")
			rows, _, _ = strings.Cut(rows, "</tbody>")
			for _, a := range anchors(t, "<tbody>"+rows+"</tbody>") {
				if a.Type != "" && a.Class == "" && !slices.Contains(typed, a.Href) {
					typed = append(typed, a.Href)
					if a.Text != a.Type {
						t.Errorf("link %s reads %q, want its type %q", a.Href, a.Text, a.Type)
					}
				}
			}
			if !slices.Equal(typed, c.typed) {
				t.Errorf("typed links %q, want %q", typed, c.typed)
			}
			// The pager appears above and below the entries.
			var pager []string
			for _, a := range as {
				if a.Rel == "next" && !slices.Contains(pager, a.Href) {
					pager = append(pager, a.Href)
				}
			}
			if !slices.Equal(pager, c.pager) {
				t.Errorf("pager %q, want %q", pager, c.pager)
			}
			if !slices.ContainsFunc(as, func(a anchor) bool { return a.Href == "/sd/" }) {
				t.Error("no breadcrumb to the overview")
			}
			for _, want := range []string{"<h1>" + c.f.Title + "</h1>", "2026-11-25 18:00:00Z", "<code>" + base + "x</code>"} {
				if !strings.Contains(page, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			for _, e := range c.f.Entries {
				for _, want := range []string{">" + e.ID + "<", e.Title} {
					if !strings.Contains(page, want) {
						t.Errorf("page lacks entry text %q", want)
					}
				}
			}
			if c.name == "fragments" {
				for _, want := range []string{`<span class="tag created">created</span>`, `<code class="resource">http://ex/a</code>`, `<span class="muted">fragment:</span>`} {
					if !strings.Contains(page, want) {
						t.Errorf("page lacks %q", want)
					}
				}
			}
		})
	}
}

// TestHostile: titles, ids and resources are text; links that are not
// http(s) or relative are shown, not linked; nothing can open a script.
func TestHostile(t *testing.T) {
	evil := `"><script>alert(1)</script>`
	f := feed(evil, []atom.Link{{Rel: "next", Href: "javascript:alert(1)"}},
		atom.Entry{ID: "javascript:alert(2)", Title: evil, Updated: t0, Summary: `created" onmouseover="x`,
			Links: []atom.Link{
				{Rel: sdshare.RelFragmentsFeed, Type: sdshare.AtomType, Href: "javascript:alert(3)"},
				{Rel: "alternate", Type: `text/plain"><script>x</script>`, Href: "JaVaScRiPt:alert(4)"},
				{Rel: sdshare.RelFragment, Type: "text/turtle", Href: "data:text/html,<script>alert(5)</script>"},
				{Rel: evil, Type: "text/turtle", Href: base + `c/fragment?resource="><script>`},
				{Rel: "alternate", Href: " javascript:alert(6)"},
				{Rel: "alternate", Href: "java\tscript:alert(7)"},
				{Rel: "alternate", Href: "//evil.example/"},
			},
			Resources: []string{evil, "javascript:alert(8)"}})
	page := render(t, f, Options{Base: base})
	if os.Getenv("ATOMVIEW_DUMP") != "" {
		t.Log(page)
	}
	if strings.Contains(strings.ToLower(page), "<script") || strings.Contains(page, `" onmouseover`) {
		t.Fatalf("markup from the feed is live:\n%s", page)
	}
	for _, a := range anchors(t, page) {
		low := strings.ToLower(strings.TrimSpace(a.Href))
		if strings.Contains(low, "script:") || strings.HasPrefix(low, "data:") {
			t.Errorf("live link %q (%q)", a.Href, a.Text)
		}
	}
	for _, want := range []string{"<code>javascript:alert(3)</code>", "<code>data:text/html,&lt;script&gt;alert(5)&lt;/script&gt;</code>",
		"&lt;script&gt;alert(1)&lt;/script&gt;", `href="/sd/c/fragment?resource=%22%3e%3cscript%3e"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestLive(t *testing.T) {
	for s, want := range map[string]bool{
		"http://a/": true, "HTTPS://a/b?c": true, "/sd/c/": true, "fragments?page=s2": true, "../x": true, "?a=b": true, "//a/": true,
		"": false, "javascript:alert(1)": false, "JAVASCRIPT:x": false, "data:x": false, "mailto:a@b": false, "urn:uuid:1": false,
		"http:/x": false, "java\tscript:x": false, " javascript:x": false, "a:b/c": false, "vbscript:x": false,
	} {
		if got := Live(s); got != want {
			t.Errorf("Live(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestShortRel(t *testing.T) {
	for in, want := range map[string]string{"": "alternate", sdshare.RelFragment: "fragment", sdshare.NS: sdshare.NS,
		sdshare.LegacyNS + "/fragment": "fragment", "next": "next"} {
		if got := ShortRel(in); got != want {
			t.Errorf("ShortRel(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFeedsFromElsewhere: the spec's examples and Ontopia's feeds (read
// with the lenient reader: legacy namespace, relative links) render.
func TestFeedsFromElsewhere(t *testing.T) {
	files, _ := filepath.Glob("../../../testdata/sdshare/spec-examples/*.atom")
	more, _ := filepath.Glob("../../../testdata/sdshare/ontopia-client-feeds/*.xml")
	files = append(files, more...)
	if len(files) < 10 {
		t.Fatalf("test feeds not found: %q", files)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := atom.Decode(bytes.NewReader(b), "http://example.org/feeds/"+filepath.Base(p))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		page := render(t, f, Options{})
		as := anchors(t, page)
		for _, e := range f.Entries {
			for _, l := range e.Links {
				if !slices.ContainsFunc(as, func(a anchor) bool { return a.Href == l.Href }) {
					t.Errorf("%s: entry %q: link %s not on the page", p, e.Title, l.Href)
				}
			}
		}
	}
}

// FuzzRender: any feed the lenient reader accepts renders to a page with
// no live markup from the feed and no link that is not http(s) or relative.
func FuzzRender(f *testing.F) {
	files, _ := filepath.Glob("../../../testdata/sdshare/spec-examples/*.atom")
	more, _ := filepath.Glob("../../../testdata/sdshare/ontopia-client-feeds/*.xml")
	for _, p := range append(files, more...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`<feed xmlns="http://www.w3.org/2005/Atom"><title>&lt;script&gt;</title><link rel="next" href="javascript:x"/><entry><title>"&gt;&lt;script&gt;</title><link href="javascript:alert(1)" type="application/atom+xml"/><link href="data:,x"/></entry></feed>`))
	f.Fuzz(func(t *testing.T, in []byte) {
		feed, err := atom.Decode(bytes.NewReader(in), "")
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := Render(&b, feed, Options{Base: base}); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		if n := strings.Count(strings.ToLower(page), "<script"); n != 0 {
			t.Fatalf("a script element on the page:\n%s", page)
		}
		for _, a := range anchors(t, page) {
			// The href as rendered: html/template percent-escapes what an
			// attribute cannot hold ("http://'x" becomes "http://%27x",
			// which url.Parse refuses as a host), so the scheme is what
			// is checked there.
			if !Live(a.Href) && a.Href != "#main" && !httpScheme(a.Href) {
				t.Fatalf("link %q is not http(s) or relative", a.Href)
			}
		}
	})
}

// httpScheme reports whether href starts with http: or https:
// (ASCII case-insensitively).
func httpScheme(href string) bool {
	l := strings.ToLower(href)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}
