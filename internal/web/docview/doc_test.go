package docview

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/rs"
)

const examples = "../../../testdata/conformance/examples"

var (
	h1Re    = regexp.MustCompile(`<h1>([^<]*)</h1>`)
	locRe   = regexp.MustCompile(`<td class="url"><a href="([^"]*)">`)
	pagerRe = regexp.MustCompile(`entries ([0-9,]+)–([0-9,]+) of ([0-9,]+)`)
)

// TestEveryKind renders every document kind of the specifications'
// examples (1.1, its companions and the older drafts): the kind is named,
// every entry's loc is a link, the root links are links.
func TestEveryKind(t *testing.T) {
	tests := []struct {
		file, kind string
	}{
		{"rs-1.1-ex-07-sourcedescription.xml", "Source Description"},
		{"rs-1.1-ex-06-capabilitylist.xml", "Capability List"},
		{"rs-1.1-ex-01-resourcelist.xml", "Resource List"},
		{"rs-1.1-ex-08-resourcelist-index.xml", "Resource List Index"},
		{"rs-1.1-ex-16-resourcelist-with-index-link.xml", "Resource List"},
		{"rs-1.1-ex-03-changelist.xml", "Change List"},
		{"rs-1.1-ex-20-changelist-index.xml", "Change List Index"},
		{"rs-1.1-ex-04-resourcedump.xml", "Resource Dump"},
		{"rs-1.1-ex-05-resourcedump-manifest.xml", "Resource Dump Manifest"},
		{"rs-1.1-ex-22-changedump.xml", "Change Dump"},
		{"rs-1.1-ex-23-changedump-manifest.xml", "Change Dump Manifest"},
		{"archives-0.9.1-ex-3-1-resourcelist-archive.xml", "Resource List Archive"},
		{"archives-0.9.1-ex-3-2-resourcelist-archive-index.xml", "Resource List Archive Index"},
		{"archives-0.9.1-ex-5-1-changelist-archive.xml", "Change List Archive"},
		{"notification-1.0.1-ex-1-change-notification-payload.xml", "Change Notification"},
		{"legacy/rs-0.9-ex-4_1-resourcelist-rel-resourcesync-from.xml", "Resource List"},
		{"legacy/rs-0.5-ex-2_2-resourcelist-md-modified.xml", "Resource List"},
		{"legacy/rs-0.1-alpha-ex-5_2-changeset.xml", "Change List"},
		{"legacy/rs-1.0-ex-23-changedump-manifest.xml", "Change Dump Manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			out, res := render(t, tt.file, Options{})
			if res.Kind != tt.kind {
				t.Errorf("kind %q, want %q", res.Kind, tt.kind)
			}
			if m := h1Re.FindStringSubmatch(out); m == nil || m[1] != tt.kind {
				t.Errorf("h1 %v, want %q", m, tt.kind)
			}
		})
	}
	// Every example: entries as links, the root links as links, changes
	// tagged, sizes with the exact count in the title.
	files, _ := filepath.Glob(filepath.Join(examples, "*.xml"))
	legacy, _ := filepath.Glob(filepath.Join(examples, "legacy", "*.xml"))
	neg, _ := filepath.Glob(filepath.Join(examples, "negative", "*.xml"))
	golden, _ := filepath.Glob("../../../rs/testdata/golden/*.xml")
	all := append(append(append(files, legacy...), neg...), golden...)
	if len(all) < 60 {
		t.Fatalf("only %d examples found", len(all))
	}
	for _, f := range all {
		rel, _ := filepath.Rel(examples, f)
		t.Run(rel, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var sb strings.Builder
			res, err := Render(&sb, bytes.NewReader(b), Options{})
			if err != nil {
				t.Fatal(err)
			}
			out := sb.String()
			h, entries := decodeAll(t, b)
			if res.Entries != len(entries) {
				t.Errorf("Entries %d, decoder %d", res.Entries, len(entries))
			}
			hrefs := locRe.FindAllStringSubmatch(out, -1)
			if len(hrefs) != len(entries) {
				t.Fatalf("%d entry links, %d entries", len(hrefs), len(entries))
			}
			for i, e := range entries {
				if got := html.UnescapeString(hrefs[i][1]); got != e.Loc {
					t.Errorf("entry %d href %q, loc %q", i+1, got, e.Loc)
				}
				if e.MD.Change != "" && !strings.Contains(out, `<span class="tag `+string(e.MD.Change)+`">`) {
					t.Errorf("change %q not tagged", e.MD.Change)
				}
				if e.MD.HasLength && !strings.Contains(out, fmt.Sprintf(`title="%s bytes"`, numString(e.MD.Length))) {
					t.Errorf("size %d not shown", e.MD.Length)
				}
				for _, x := range e.MD.Hashes {
					if !strings.Contains(html.UnescapeString(out), x.Alg+":"+x.Value) {
						t.Errorf("hash %s:%s not shown", x.Alg, x.Value)
					}
				}
			}
			for _, l := range h.Links {
				if !strings.Contains(out, `<a href="`+html.EscapeString(l.Href)+`">`) {
					t.Errorf("root link %s %q is no link", l.Rel, l.Href)
				}
			}
			for _, tm := range []rs.Time{h.MD.At, h.MD.From, h.MD.Until, h.MD.Completed} {
				if !tm.IsZero() && !strings.Contains(html.UnescapeString(out), "<dd>"+tm.String()+"</dd>") {
					t.Errorf("time %s not shown", tm)
				}
			}
		})
	}
}

func numString(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func render(t *testing.T, file string, o Options) (string, Result) {
	t.Helper()
	f, err := os.Open(filepath.Join(examples, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sb strings.Builder
	res, err := Render(&sb, f, o)
	if err != nil {
		t.Fatal(err)
	}
	return sb.String(), res
}

func decodeAll(t *testing.T, b []byte) (*rs.Head, []*rs.Entry) {
	dec := rs.NewDecoder(bytes.NewReader(b))
	h, err := dec.Head()
	if err != nil {
		return &rs.Head{}, nil
	}
	var es []*rs.Entry
	for {
		e, err := dec.Next()
		if err != nil {
			break
		}
		es = append(es, e)
	}
	return h, es
}

// TestLinksAndCrumbs: Link maps every document URL, Open lets the
// breadcrumbs climb from a part to the Source Description.
func TestLinksAndCrumbs(t *testing.T) {
	docs := map[string]string{
		"http://example.com/.well-known/resourcesync": `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="description"/><url><loc>http://example.com/cl.xml</loc><rs:md capability="capabilitylist"/></url></urlset>`,
		"http://example.com/cl.xml":                   `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:ln rel="up" href="http://example.com/.well-known/resourcesync"/><rs:md capability="capabilitylist"/><url><loc>http://example.com/rl.xml</loc><rs:md capability="resourcelist"/></url></urlset>`,
		"http://example.com/rl.xml":                   `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:ln rel="up" href="http://example.com/cl.xml"/><rs:md capability="resourcelist" at="2020-01-01T00:00:00Z"/><sitemap><loc>http://example.com/rl-1.xml</loc></sitemap></sitemapindex>`,
	}
	part := `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:ln rel="up" href="http://example.com/cl.xml"/><rs:ln rel="index" href="http://example.com/rl.xml"/><rs:md capability="resourcelist" at="2020-01-01T00:00:00Z"/><url><loc>http://example.com/a</loc></url></urlset>`
	o := Options{
		Self: "http://example.com/rl-1.xml",
		Link: func(h string) string { return strings.Replace(h, ".xml", ".html", 1) },
		Open: func(h string) (io.ReadCloser, error) {
			if d, ok := docs[h]; ok {
				return io.NopCloser(strings.NewReader(d)), nil
			}
			return nil, errors.New("no")
		},
	}
	var sb strings.Builder
	if _, err := Render(&sb, strings.NewReader(part), o); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	want := `<ol><li><a href="http://example.com/.well-known/resourcesync">Source Description</a></li><li><a href="http://example.com/cl.html">Capability List</a></li><li><a href="http://example.com/rl.html">Resource List Index</a></li><li aria-current="page">Resource List</li></ol>`
	if !strings.Contains(out, want) {
		t.Errorf("breadcrumbs:\n%s\nwant %s", out[:strings.Index(out, "</header>")], want)
	}
	// Without Open: the index and up links, named by guess.
	o.Open = nil
	sb.Reset()
	Render(&sb, strings.NewReader(part), o)
	if want := `<ol><li><a href="http://example.com/cl.html">Capability List</a></li><li><a href="http://example.com/rl.html">Index</a></li>`; !strings.Contains(sb.String(), want) {
		t.Errorf("breadcrumbs without Open: want %s", want)
	}
}

// bigList streams a Resource List of n entries without holding it; heap
// samples the live heap every 5,000 entries.
type bigList struct {
	n, i  int
	buf   bytes.Buffer
	done  bool
	index bool
	heap  uint64
}

func (b *bigList) Read(p []byte) (int, error) {
	for b.buf.Len() < len(p) && !b.done {
		switch {
		case b.i == 0 && b.buf.Len() == 0 && !b.index:
			b.buf.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:ln rel="up" href="http://example.com/cl.xml"/><rs:md capability="resourcelist" at="2020-01-01T00:00:00Z"/>`)
			b.index = true
		case b.i < b.n:
			b.i++
			fmt.Fprintf(&b.buf, `<url><loc>http://example.com/r/%d</loc><lastmod>2020-01-01T00:00:00Z</lastmod><rs:md hash="md5:1e0d5cb8ef6ba40c99b14c0237be735e sha-256:854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784" length="%d" type="text/plain"/></url>`, b.i, b.i)
			if b.i%5000 == 0 {
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				b.heap = max(b.heap, ms.HeapAlloc)
			}
		default:
			b.buf.WriteString(`</urlset>`)
			b.done = true
		}
	}
	if b.buf.Len() == 0 {
		return 0, io.EOF
	}
	return b.buf.Read(p)
}

// TestPaging: a 50,000-entry list, 1,000 entries a page, with a pager;
// memory does not grow with the list (a 200,000-entry list renders in
// the same heap).
func TestPaging(t *testing.T) {
	for _, tt := range []struct {
		page                  int
		from, to              string
		first, rows, pagerNav bool
	}{
		{1, "1", "1,000", false, true, true},
		{3, "2,001", "3,000", true, true, true},
		{50, "49,001", "50,000", true, true, true},
	} {
		var sb strings.Builder
		res, err := Render(&sb, &bigList{n: 50000}, Options{Page: tt.page})
		if err != nil {
			t.Fatal(err)
		}
		out := sb.String()
		if res.Entries != 50000 || res.Pages != 50 {
			t.Errorf("page %d: %+v", tt.page, res)
		}
		m := pagerRe.FindStringSubmatch(out)
		if m == nil || m[1] != tt.from || m[2] != tt.to || m[3] != "50,000" {
			t.Errorf("page %d: pager %v", tt.page, m)
		}
		if n := len(locRe.FindAllString(out, -1)); n != 1000 {
			t.Errorf("page %d: %d rows", tt.page, n)
		}
		if tt.page > 1 && !strings.Contains(out, `<a href="?page=1" rel="first">`) {
			t.Errorf("page %d: no first link", tt.page)
		}
		if tt.page < 50 && !strings.Contains(out, fmt.Sprintf(`<a href="?page=%d" rel="next">`, tt.page+1)) {
			t.Errorf("page %d: no next link", tt.page)
		}
		if !strings.Contains(out, fmt.Sprintf("page %d of 50", tt.page)) {
			t.Errorf("page %d: title has no page", tt.page)
		}
	}
	var sb strings.Builder
	Render(&sb, &bigList{n: 50000}, Options{Page: 99})
	if !strings.Contains(sb.String(), "There is no page 99") {
		t.Error("page past the end not explained")
	}
	if testing.Short() {
		// The heap comparison: not in the race pass (-short), whose
		// instrumentation inflates the heap; the plain pass runs it.
		return
	}
	small := &bigList{n: 20000}
	Render(io.Discard, small, Options{Page: 2})
	big := &bigList{n: 200000}
	Render(io.Discard, big, Options{Page: 2})
	t.Logf("live heap: %d KiB for 20,000 entries, %d KiB for 200,000", small.heap>>10, big.heap>>10)
	if big.heap > small.heap+8<<20 {
		t.Errorf("heap grows with the list: %d then %d bytes", small.heap, big.heap)
	}
}

// TestRenderPages: one pass writes every page, the pager links to the
// page names given.
func TestRenderPages(t *testing.T) {
	n, err := Count(&bigList{n: 2500})
	if err != nil || n != 2500 {
		t.Fatal(n, err)
	}
	pages := map[int]string{}
	var mu sync.Mutex
	res, err := RenderPages(&bigList{n: 2500}, n, Options{PageURL: func(n int) string { return fmt.Sprintf("rl.%d.html", n) }}, func(p int) (io.Writer, func(error) error, error) {
		var b strings.Builder
		return &b, func(err error) error {
			mu.Lock()
			defer mu.Unlock()
			pages[p] = b.String()
			return err
		}, nil
	})
	if err != nil || res.Pages != 3 || res.Entries != 2500 || len(pages) != 3 {
		t.Fatalf("%+v %v %d pages", res, err, len(pages))
	}
	for p, want := range map[int][3]string{1: {"1", "1,000", ""}, 2: {"1,001", "2,000", "rl.1.html"}, 3: {"2,001", "2,500", "rl.1.html"}} {
		m := pagerRe.FindStringSubmatch(pages[p])
		if m == nil || m[1] != want[0] || m[2] != want[1] || m[3] != "2,500" {
			t.Errorf("page %d: pager %v", p, m)
		}
		if want[2] != "" && !strings.Contains(pages[p], `href="`+want[2]+`" rel="first"`) {
			t.Errorf("page %d: no first link to %s", p, want[2])
		}
	}
	if !strings.Contains(pages[1], `href="rl.3.html" rel="last"`) {
		t.Error("page 1: no last link")
	}
}

// TestBroken: a document that is not well-formed still gets a page, with
// the entries before the error and the error.
func TestBroken(t *testing.T) {
	doc := `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://e.com/a</loc></url><url><loc>http://e.com/b</loc>`
	var sb strings.Builder
	res, err := Render(&sb, strings.NewReader(doc), Options{})
	if err != nil || res.Err == nil || res.Entries != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	if !strings.Contains(sb.String(), `role="alert"`) || !strings.Contains(sb.String(), `href="http://e.com/a"`) {
		t.Error("error or entry not shown")
	}
	sb.Reset()
	if _, err := Render(&sb, strings.NewReader("not xml"), Options{}); err != nil || !strings.Contains(sb.String(), "Unreadable document") {
		t.Errorf("not XML: %v", err)
	}
}

var tagRe = regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9-]*)`)

var allowedTags = map[string]bool{"html": true, "head": true, "meta": true, "title": true, "style": true, "body": true, "a": true,
	"header": true, "nav": true, "ol": true, "li": true, "main": true, "footer": true, "h1": true, "h2": true, "p": true, "code": true,
	"dl": true, "dt": true, "dd": true, "ul": true, "span": true, "details": true, "summary": true, "div": true, "table": true,
	"thead": true, "tbody": true, "tr": true, "th": true, "td": true, "br": true}

// checkSafe fails unless out holds only the elements the template writes,
// and no link with a scheme other than http(s) or a relative one.
func checkSafe(t testing.TB, out string) {
	for _, m := range tagRe.FindAllStringSubmatch(out, -1) {
		if !allowedTags[strings.ToLower(m[2])] {
			t.Fatalf("unexpected element <%s> in output:\n%s", m[2], out)
		}
	}
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(out, -1) {
		h := strings.ToLower(html.UnescapeString(m[1]))
		if i := strings.IndexAny(h, ":/?#"); i >= 0 && h[i] == ':' && !strings.HasPrefix(h, "http:") && !strings.HasPrefix(h, "https:") {
			t.Fatalf("href with scheme: %q", m[1])
		}
	}
	if strings.Contains(strings.ToLower(out), "javascript:") && strings.Contains(out, `href="javascript`) {
		t.Fatal("javascript link")
	}
}

func FuzzRender(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(examples, "*.xml"))
	for _, p := range files[:min(len(files), 12)] {
		b, _ := os.ReadFile(p)
		f.Add(b, 1)
	}
	f.Add([]byte(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:ln rel="up&quot;&gt;&lt;script&gt;" href="javascript:alert(1)"/><rs:md capability="&lt;b&gt;x"/><url><loc>"&gt;&lt;script&gt;alert(1)&lt;/script&gt;</loc><rs:md change="created&quot; onclick=&quot;x" hash="md5:&lt;i&gt;"/></url><url><loc>http://e.com/a"&gt;&lt;img src=x&gt;</loc></url></urlset>`), 1)
	f.Add([]byte(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>data:text/html,&lt;script&gt;</loc></sitemap></sitemapindex>`), 2)
	f.Fuzz(func(t *testing.T, doc []byte, page int) {
		var sb strings.Builder
		if _, err := Render(&sb, bytes.NewReader(doc), Options{Page: page % 1000, PageSize: 2}); err != nil {
			t.Fatal(err)
		}
		checkSafe(t, sb.String())
	})
}

func TestHostile(t *testing.T) {
	doc := `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:ln rel="up&quot;&gt;&lt;script&gt;" href="javascript:alert(1)"/><url><loc>"&gt;&lt;script&gt;alert(1)&lt;/script&gt;</loc><rs:md change="created&quot; onclick=&quot;x"/></url><url><loc>javascript:alert(1)</loc></url></urlset>`
	var sb strings.Builder
	if _, err := Render(&sb, strings.NewReader(doc), Options{}); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	checkSafe(t, out)
	if strings.Contains(out, "<script") || strings.Contains(out, `onclick="`) || strings.Contains(out, `href="javascript`) {
		t.Errorf("unescaped input:\n%s", out)
	}
}

// BenchmarkRenderPages: every page of a 50,000-entry Resource List.
func BenchmarkRenderPages(b *testing.B) {
	for b.Loop() {
		RenderPages(&bigList{n: 50000}, 50000, Options{}, func(int) (io.Writer, func(error) error, error) {
			return io.Discard, func(err error) error { return err }, nil
		})
	}
}

// BenchmarkDecode: the decoding alone, for comparison.
func BenchmarkDecode(b *testing.B) {
	for b.Loop() {
		Count(&bigList{n: 50000})
	}
}
