package rs

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

const docStart = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>
`

// repeatReader yields prefix, then body repeated n times, then suffix,
// without holding the whole document.
type repeatReader struct {
	parts [][]byte
	reps  []int
	i, k  int
	off   int
}

func newRepeat(prefix string, body string, n int, suffix string) io.Reader {
	return &repeatReader{parts: [][]byte{[]byte(prefix), []byte(body), []byte(suffix)}, reps: []int{1, n, 1}}
}

func (r *repeatReader) Read(p []byte) (int, error) {
	total := 0
	for total < len(p) {
		if r.i >= len(r.parts) {
			if total == 0 {
				return 0, io.EOF
			}
			break
		}
		if r.k >= r.reps[r.i] {
			r.i, r.k, r.off = r.i+1, 0, 0
			continue
		}
		n := copy(p[total:], r.parts[r.i][r.off:])
		total += n
		r.off += n
		if r.off == len(r.parts[r.i]) {
			r.off = 0
			r.k++
		}
	}
	return total, nil
}

func decodeErr(r io.Reader, lim Limits) error {
	d := NewDecoder(r)
	d.Limits = lim
	if _, err := d.Head(); err != nil {
		return err
	}
	for {
		_, err := d.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// TestHostileInput feeds documents built to exhaust a parser and checks
// that each is refused with its specific error, a position, and memory
// bounded by the limits rather than by the input.
func TestHostileInput(t *testing.T) {
	const laughs = `<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol9 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>&lol9;</loc></url></urlset>`
	const xxe = `<?xml version="1.0"?>
<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>&xxe;</loc></url></urlset>`
	tests := []struct {
		name string
		r    func() io.Reader
		lim  Limits
		want error
		line int // expected line of the error; 0: any
	}{
		{"billion laughs", func() io.Reader { return strings.NewReader(laughs) }, Limits{}, ErrDTD, 2},
		{"external entity", func() io.Reader { return strings.NewReader(xxe) }, Limits{}, ErrDTD, 2},
		{"undeclared entity", func() io.Reader {
			return strings.NewReader(docStart + "<url><loc>http://example.com/&xxe;</loc></url></urlset>")
		}, Limits{}, ErrEntity, 4},
		{"200 MB text node", func() io.Reader {
			return newRepeat(docStart+"<url><loc>http://example.com/", strings.Repeat("a", 1<<20), 200, "</loc></url></urlset>")
		}, Limits{}, ErrTokenTooLarge, 4},
		{"200 MB of white space", func() io.Reader {
			return newRepeat(docStart, strings.Repeat(" ", 1<<20), 200, "</urlset>")
		}, Limits{}, ErrTokenTooLarge, 3}, // the text node starts with line 3's newline
		{"huge attribute value", func() io.Reader {
			return newRepeat(docStart+`<url><loc>http://example.com/</loc><rs:md type="`, strings.Repeat("x", 1<<16), 100, `"/></url></urlset>`)
		}, Limits{}, ErrTokenTooLarge, 4},
		{"1,000,000-deep nesting", func() io.Reader {
			return newRepeat(docStart+"<url>", "<x>", 1000000, "")
		}, Limits{}, ErrDepth, 4},
		{"too many attributes", func() io.Reader {
			return newRepeat(docStart+"<url><loc>http://example.com/</loc><rs:md ", `a="1" `, 100000, "/></url></urlset>")
		}, Limits{}, ErrAttrs, 4},
		{"duplicate attribute", func() io.Reader {
			return strings.NewReader(docStart + `<url><loc>http://example.com/</loc><rs:md length="1" length="2"/></url></urlset>`)
		}, Limits{}, ErrSyntax, 4},
		{"invalid UTF-8", func() io.Reader {
			return strings.NewReader(docStart + "<url><loc>http://example.com/\xff\xfe</loc></url></urlset>")
		}, Limits{}, ErrInvalidUTF8, 4},
		{"invalid UTF-8 in attribute", func() io.Reader {
			return strings.NewReader(docStart + "<url><loc>http://example.com/</loc><rs:md type=\"a\xc3\"/></url></urlset>")
		}, Limits{}, ErrInvalidUTF8, 4},
		{"control character", func() io.Reader {
			return strings.NewReader(docStart + "<url><loc>http://example.com/\x01</loc></url></urlset>")
		}, Limits{}, ErrInvalidChar, 4},
		{"document too large", func() io.Reader { return newGenReader(100000) }, Limits{MaxDocumentBytes: 1 << 20}, ErrDocumentTooLarge, 0},
		{"UTF-16", func() io.Reader { return strings.NewReader("\xff\xfe<\x00u\x00") }, Limits{}, ErrEncoding, 1},
		{"declared Latin-1", func() io.Reader {
			return strings.NewReader(`<?xml version="1.0" encoding="ISO-8859-1"?><urlset/>`)
		}, Limits{}, ErrEncoding, 1},
		{"wrong root", func() io.Reader { return strings.NewReader(`<feed xmlns="http://www.w3.org/2005/Atom"/>`) }, Limits{}, ErrRoot, 1},
		{"wrong namespace", func() io.Reader {
			return strings.NewReader(`<urlset xmlns="http://www.google.com/schemas/sitemap/0.84"></urlset>`)
		}, Limits{}, ErrNamespace, 1},
		{"truncated", func() io.Reader { return strings.NewReader(docStart + "<url><loc>http://example.com/</loc>") }, Limits{}, ErrTruncated, 0},
		{"truncated in a tag", func() io.Reader { return strings.NewReader(docStart + "<url><loc>http://example.com/</loc><rs:md len") }, Limits{}, ErrTruncated, 4},
		{"mismatched end tag", func() io.Reader { return strings.NewReader(docStart + "<url><loc>x</lastmod></url></urlset>") }, Limits{}, ErrSyntax, 4},
		{"undeclared prefix", func() io.Reader { return strings.NewReader(docStart + "<url><x:loc>x</x:loc></url></urlset>") }, Limits{}, ErrSyntax, 4},
		{"raw ampersand", func() io.Reader {
			return strings.NewReader(docStart + "<url><loc>http://e.com/?a=1&b=2</loc></url></urlset>")
		}, Limits{}, ErrSyntax, 4},
		{"content after root", func() io.Reader { return strings.NewReader(docStart + "</urlset><urlset/>") }, Limits{}, ErrSyntax, 4},
		{"empty", func() io.Reader { return strings.NewReader("") }, Limits{}, ErrSyntax, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := decodeErr(tt.r(), tt.lim)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *SyntaxError", err)
			}
			if tt.line != 0 && se.Pos.Line != tt.line {
				t.Errorf("error at line %d, want %d: %v", se.Pos.Line, tt.line, err)
			}
			if tt.line != 0 && !strings.Contains(err.Error(), "line ") {
				t.Errorf("message lacks a position: %v", err)
			}
			// Memory is bounded by the 1 MiB token limit, not by the input.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("allocated %d MiB", alloc>>20)
			}
		})
	}
}

func TestDecodeEntry(t *testing.T) {
	doc := docStart + `<rs:ln rel="up" href="http://example.com/capabilitylist.xml"/>
<url>
  <loc> http://example.com/res1 </loc>
  <lastmod>2013-01-02T13:00:00.25+01:00</lastmod>
  <changefreq>daily</changefreq>
  <rs:md hash="md5:1584abdf8ebdc9802ac0c6a7402c03b6 sha-256:854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784"
         length="8876" type="text/html; charset=utf-8" encoding="gzip" ext:x="1" xmlns:ext="urn:ext"/>
  <rs:ln rel="duplicate" href="http://mirror.example.com/res1" pri="1" modified="2013-01-02T14:00:00Z"/>
  <unknown><nested>ignored</nested></unknown>
  <![CDATA[ignored]]>
</url>
<url><loc><![CDATA[http://example.com/a&b]]></loc></url>
<url><loc>http://example.com/&#x263A;&amp;&lt;</loc></url>
</urlset>`
	d := NewDecoder(strings.NewReader(doc))
	h, err := d.Head()
	if err != nil {
		t.Fatal(err)
	}
	if h.Capability() != CapResourceList || h.MD.At.String() != "2013-01-03T09:00:00Z" || h.Link(RelUp) != "http://example.com/capabilitylist.xml" {
		t.Fatalf("head = %+v", h)
	}
	e, err := d.Next()
	if err != nil {
		t.Fatal(err)
	}
	if p := d.Pos(); p.Line != 5 || p.Col != 1 {
		t.Errorf("entry position %v, want 5:1", p)
	}
	if e.Loc != "http://example.com/res1" || e.LastMod.String() != "2013-01-02T13:00:00.25+01:00" || e.ChangeFreq != "daily" {
		t.Errorf("entry = %+v", e)
	}
	md := e.MD
	if md.Hashes.Get(MD5) != "1584abdf8ebdc9802ac0c6a7402c03b6" || len(md.Hashes) != 2 || !md.HasLength || md.Length != 8876 ||
		md.Type != "text/html; charset=utf-8" || md.Encoding != "gzip" {
		t.Errorf("md = %+v", md)
	}
	if len(md.Extra) != 1 || md.Extra[0] != (Attr{Space: "urn:ext", Local: "x", Value: "1"}) {
		t.Errorf("extra = %+v", md.Extra)
	}
	if len(e.Links) != 1 || e.Links[0].Pri != 1 || e.Link(RelDuplicate) != "http://mirror.example.com/res1" || e.Links[0].Modified.IsZero() {
		t.Errorf("links = %+v", e.Links)
	}
	for _, want := range []string{"http://example.com/a&b", "http://example.com/\u263a&<"} {
		e, err := d.Next()
		if err != nil || e.Loc != want {
			t.Errorf("loc = %q, %v; want %q", e.Loc, err, want)
		}
	}
	if _, err := d.Next(); err != io.EOF {
		t.Errorf("end: %v", err)
	}
	if _, err := d.Next(); err != io.EOF {
		t.Errorf("after end: %v", err)
	}
	if diags := d.TakeDiagnostics(); len(diags) != 0 {
		t.Errorf("diagnostics: %v", diags)
	}
}

func TestDecodeDiagnostics(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		rules []string
	}{
		{"bad datetime", docStart + `<url><loc>http://e.com/</loc><lastmod>2013-01-02T13:00:00</lastmod></url></urlset>`, []string{"RS-DT-2"}},
		{"bad length", docStart + `<url><loc>http://e.com/</loc><rs:md length="-3"/></url></urlset>`, []string{"RS-URL-6"}},
		{"bad pri", docStart + `<url><loc>http://e.com/</loc><rs:ln rel="duplicate" href="x" pri="0"/></url></urlset>`, []string{"RS-LN-2"}},
		{"prefixed attribute", docStart + `<url><loc>http://e.com/</loc><rs:md rs:type="x"/></url></urlset>`, []string{"RS-GEN-4"}},
		{"repeated md", docStart + `<url><loc>http://e.com/</loc><rs:md type="a"/><rs:md type="b"/></url></urlset>`, []string{"RS-GEN-6"}},
		{"second root md", docStart + `<rs:md capability="resourcelist"/><url><loc>http://e.com/</loc></url></urlset>`, []string{"RS-GEN-6"}},
		{"late head", `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><url><loc>http://e.com/</loc></url><rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/></urlset>`, []string{"RS-GEN-10"}},
		{"no namespace", `<urlset><url><loc>http://e.com/</loc></url></urlset>`, []string{"RS-NS"}},
		{"notification 1.0", `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="changelist-notification" from="2013-01-03T00:00:00Z" until="2013-01-03T00:10:00Z"/></urlset>`, []string{"RS-LEG-11"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder(strings.NewReader(tt.doc))
			n := 0
			for _, err := range d.All() {
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			got := map[string]bool{}
			for _, dg := range d.TakeDiagnostics() {
				got[dg.Rule] = true
				if dg.Pos.Line == 0 {
					t.Errorf("diagnostic without position: %v", dg)
				}
			}
			for _, r := range tt.rules {
				if !got[r] {
					t.Errorf("missing diagnostic %s; got %v", r, got)
				}
			}
		})
	}
}

func TestLateHeadMerged(t *testing.T) {
	d := NewDecoder(strings.NewReader(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><url><loc>http://e.com/</loc></url><rs:ln rel="up" href="http://e.com/cl.xml"/><rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/></urlset>`))
	h, err := d.Head()
	if err != nil {
		t.Fatal(err)
	}
	if h.Capability() != "" {
		t.Fatalf("capability known before it was read: %q", h.Capability())
	}
	for _, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
	}
	if !d.LateHead() || h.Capability() != CapResourceList || h.Link(RelUp) == "" {
		t.Errorf("late head not merged: late=%v head=%+v", d.LateHead(), h)
	}
}

func TestEmptyDocuments(t *testing.T) {
	for _, doc := range []string{
		`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="changelist" from="2013-01-03T00:00:00Z"/></urlset>`,
		`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>`,
	} {
		d := NewDecoder(strings.NewReader(doc))
		if _, err := d.Head(); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Next(); err != io.EOF {
			t.Errorf("Next on empty document: %v", err)
		}
	}
}

// TestStreamMillionBoundedHeap decodes 1,000,000 generated entries and
// checks that the live heap stays small: entries are not accumulated.
func TestStreamMillionBoundedHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 1,000,000 entries (about 3 s); skipped with -short")
	}
	d := NewDecoder(newGenReader(1000000))
	if _, err := d.Head(); err != nil {
		t.Fatal(err)
	}
	var e Entry
	var ms runtime.MemStats
	maxHeap := uint64(0)
	for n := 0; ; n++ {
		err := d.NextInto(&e)
		if err == io.EOF {
			if n != 1000000 {
				t.Fatalf("decoded %d entries", n)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n%100000 == 0 {
			runtime.ReadMemStats(&ms)
			maxHeap = max(maxHeap, ms.HeapAlloc)
		}
	}
	if maxHeap > 32<<20 {
		t.Errorf("heap reached %d MiB while streaming", maxHeap>>20)
	}
}

func FuzzDecoder(f *testing.F) {
	for _, p := range exampleFiles(f) {
		b, err := readFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(docStart + "</urlset>"))
	f.Add([]byte(rootStart + `<rs:ln rel="Up" href="x"/><rs:md capability="changelist" modified="2013-01-03T11:00:00Z"/>` +
		`<url><loc>a</loc><loc>b</loc><rs:md hash=""/><rs:ln rel="describedBy" href="y"/><rs:ln rel="via" href="z"/></url></urlset>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := NewDecoder(bytes.NewReader(b))
		d.Limits = Limits{MaxTokenBytes: 4096, MaxDepth: 16, MaxDocumentBytes: 1 << 20, MaxLinks: 8}
		if _, err := d.Head(); err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("head error %T %v is not a *SyntaxError", err, err)
			}
			return
		}
		for _, err := range d.All() {
			if err != nil {
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Fatalf("error %T %v is not a *SyntaxError", err, err)
				}
				return
			}
		}
		d.TakeDiagnostics()
	})
}
