package rs

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func tm(s string) Time {
	t, err := ParseTime(s)
	if err != nil {
		panic(err)
	}
	return t
}

const extNS = "http://example.org/ext/"

// goldenDocs are documents written by the Encoder and compared with
// testdata/golden/<name>.xml; all of them must validate against the XSDs.
var goldenDocs = []struct {
	name    string
	head    Head
	entries []Entry
}{
	{
		name: "resourcelist-full",
		head: Head{
			MD: Metadata{Capability: CapResourceList, At: tm("2013-01-03T09:00:00Z"), Completed: tm("2013-01-03T09:01:00.5+01:00"),
				Extra: []Attr{{Space: extNS, Local: "note", Value: "root & <head>"}}},
			Links: []Link{
				{Rel: RelUp, Href: "http://example.com/dataset1/capabilitylist.xml"},
				{Rel: RelDescribedBy, Href: "http://example.com/info?a=1&b=2", Type: "text/html", Extra: []Attr{{Space: extNS, Local: "x", Value: "1"}}},
			},
		},
		entries: []Entry{
			{Loc: "http://example.com/res1", LastMod: tm("2013-01-02T13:00:00Z"),
				MD: Metadata{Hashes: Hashes{{MD5, "1584abdf8ebdc9802ac0c6a7402c03b6"}, {SHA256, "854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784"}},
					Length: 8876, HasLength: true, Type: "text/html", Encoding: "gzip"}},
			{Loc: "http://example.com/search?q=a&lang=en", LastMod: tm("2013-01-02"), ChangeFreq: "daily", Priority: "0.5"},
			{Loc: "http://example.com/res3",
				MD: Metadata{Type: "application/pdf", Extra: []Attr{{Space: extNS, Local: "note", Value: "tab\there \"quoted\""}, {Space: "http://example.org/other/", Local: "y", Value: "2"}}},
				Links: []Link{
					{Rel: RelDuplicate, Href: "http://mirror.example.com/res3", Pri: 1, Modified: tm("2013-01-02T13:00:00Z"),
						Hashes: Hashes{{MD5, "1584abdf8ebdc9802ac0c6a7402c03b6"}}, Length: 12, HasLength: true, Type: "application/pdf"},
					{Rel: RelDescribedBy, Href: "http://example.com/res3.xml", Type: "application/xml", Profile: "http://example.org/profile"},
				}},
		},
	},
	{
		name: "changelist",
		head: Head{
			MD:    Metadata{Capability: CapChangeList, From: tm("2013-01-02T00:00:00Z"), Until: tm("2013-01-03T00:00:00Z")},
			Links: []Link{{Rel: RelUp, Href: "http://example.com/dataset1/capabilitylist.xml"}},
		},
		entries: []Entry{
			{Loc: "http://example.com/res7", MD: Metadata{Change: Created, DateTime: tm("2013-01-02T12:00:00Z")}},
			{Loc: "http://example.com/res9", LastMod: tm("2013-01-01T08:00:00Z"), MD: Metadata{Change: Updated, DateTime: tm("2013-01-02T13:00:00.123456789Z")}},
			{Loc: "http://example.com/res5", MD: Metadata{Change: Deleted, DateTime: tm("2013-01-02T19:00:00-05:00")}},
		},
	},
	{
		name: "resourcedump-manifest",
		head: Head{MD: Metadata{Capability: CapResourceDumpManifest, At: tm("2013-01-03T09:00:00Z")},
			Links: []Link{{Rel: RelUp, Href: "http://example.com/dataset1/capabilitylist.xml"}}},
		entries: []Entry{
			{Loc: "http://example.com/res1", MD: Metadata{Path: "/resources/res1", Length: 0, HasLength: true, Type: "text/plain"},
				Links: []Link{{Rel: RelContents, Href: "http://example.com/manifest.xml", Path: "/manifest.xml", Encoding: "identity"}}},
		},
	},
	{
		name: "resourcelist-index",
		head: Head{Root: SitemapIndex, MD: Metadata{Capability: CapResourceList, At: tm("2013-01-03T09:00:00Z")},
			Links: []Link{{Rel: RelUp, Href: "http://example.com/dataset1/capabilitylist.xml"}}},
		entries: []Entry{
			{Loc: "http://example.com/resourcelist-part1.xml", MD: Metadata{At: tm("2013-01-03T09:00:00Z")}},
			{Loc: "http://example.com/resourcelist-part2.xml", LastMod: tm("2013-01-03T09:05:00Z")},
		},
	},
}

func TestEncoderGolden(t *testing.T) {
	v := newXSDValidator(t)
	for _, g := range goldenDocs {
		t.Run(g.name, func(t *testing.T) {
			got := encodeDoc(t, &g.head, g.entries)
			path := filepath.Join("testdata", "golden", g.name+".xml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s (go test -update rewrites it):\n%s", path, got)
			}
			if err := v.Validate(g.name, got); err != nil {
				t.Error(err)
			}
			checkWellFormed(t, got)
		})
	}
}

// checkWellFormed parses doc with encoding/xml.
func checkWellFormed(t testing.TB, doc []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, doc)
		}
	}
}

func TestEscaping(t *testing.T) {
	tests := []struct {
		in, text, attr string
	}{
		{"", "", ""},
		{"plain", "plain", "plain"},
		{"a&b<c>d", "a&amp;b&lt;c&gt;d", "a&amp;b&lt;c&gt;d"},
		{`say "hi" 'x'`, `say "hi" 'x'`, `say &quot;hi&quot; 'x'`},
		{"t\tn\nr\r", "t\tn\nr&#xD;", "t&#x9;n&#xA;r&#xD;"},
		{"é ü 日本 \U0001F600 \uFFFD \uE000 \U0010FFFF", "é ü 日本 \U0001F600 \uFFFD \uE000 \U0010FFFF", "é ü 日本 \U0001F600 \uFFFD \uE000 \U0010FFFF"},
		{"]]>", "]]&gt;", "]]&gt;"},
	}
	for _, tt := range tests {
		got, err := appendText(nil, tt.in, "test")
		if err != nil || string(got) != tt.text {
			t.Errorf("appendText(%q) = %q, %v; want %q", tt.in, got, err, tt.text)
		}
		got, err = appendAttrText(nil, tt.in, "test")
		if err != nil || string(got) != tt.attr {
			t.Errorf("appendAttrText(%q) = %q, %v; want %q", tt.in, got, err, tt.attr)
		}
		// What encoding/xml reads back is the input (CR kept as a reference).
		doc := "<a v=\"" + tt.attr + "\">" + tt.text + "</a>"
		var v struct {
			V    string `xml:"v,attr"`
			Text string `xml:",chardata"`
		}
		if err := xml.Unmarshal([]byte(doc), &v); err != nil || v.V != tt.in || v.Text != tt.in {
			t.Errorf("%q read back as attr %q, text %q, %v", tt.in, v.V, v.Text, err)
		}
	}
}

func TestInvalidXMLChar(t *testing.T) {
	tests := []struct {
		in   string
		utf8 bool // also ErrInvalidUTF8
	}{
		{"a\x00b", false},
		{"\x01", false},
		{"\x1f", false},
		{"\x0b\x0c", false},
		{"\uFFFE", false},
		{"\uFFFF", false},
		{"bad \xff byte", true},
		{"truncated \xe6\x97", true},
		{"surrogate \xed\xa0\x80", true},
		{"overlong \xc0\xaf", true},
	}
	for _, tt := range tests {
		for _, attr := range []bool{false, true} {
			_, err := appendEscaped(nil, tt.in, attr, "test")
			if !errors.Is(err, ErrInvalidXMLChar) || errors.Is(err, ErrInvalidUTF8) != tt.utf8 {
				t.Errorf("appendEscaped(%q, attr=%v) error %v; want ErrInvalidXMLChar (and ErrInvalidUTF8: %v)", tt.in, attr, err, tt.utf8)
			}
		}
	}

	// Every string field of an entry is checked, and a refused entry
	// writes nothing: the document stays well formed.
	bad := "x\x00"
	entries := []Entry{
		{Loc: bad},
		{Loc: "http://example.com/a", ChangeFreq: bad},
		{Loc: "http://example.com/a", Priority: bad},
		{Loc: "http://example.com/a", MD: Metadata{Capability: Capability(bad)}},
		{Loc: "http://example.com/a", MD: Metadata{Change: Change(bad)}},
		{Loc: "http://example.com/a", MD: Metadata{Type: bad}},
		{Loc: "http://example.com/a", MD: Metadata{Encoding: bad}},
		{Loc: "http://example.com/a", MD: Metadata{Path: bad}},
		{Loc: "http://example.com/a", MD: Metadata{Hashes: Hashes{{MD5, bad}}}},
		{Loc: "http://example.com/a", MD: Metadata{Hashes: Hashes{{bad, "00"}}}},
		{Loc: "http://example.com/a", MD: Metadata{Extra: []Attr{{Space: extNS, Local: "a", Value: bad}}}},
		{Loc: "http://example.com/a", MD: Metadata{Extra: []Attr{{Space: bad, Local: "a", Value: "v"}}}},
		{Loc: "http://example.com/a", Links: []Link{{Rel: bad, Href: "http://example.com/"}}},
		{Loc: "http://example.com/a", Links: []Link{{Rel: "alternate", Href: bad}}},
		{Loc: "http://example.com/a", Links: []Link{{Rel: "alternate", Href: "http://example.com/", Type: bad}}},
		{Loc: "http://example.com/a", Links: []Link{{Rel: "alternate", Href: "http://example.com/", Encoding: bad}}},
		{Loc: "http://example.com/a", Links: []Link{{Rel: "alternate", Href: "http://example.com/", Path: bad}}},
		{Loc: "http://example.com/a", Links: []Link{{Rel: "alternate", Href: "http://example.com/", Profile: bad}}},
		{Loc: "http://example.com/a", Links: []Link{{Rel: "alternate", Href: "http://example.com/", Hashes: Hashes{{MD5, bad}}}}},
		{Loc: "http://example.com/a", Links: []Link{{Rel: "alternate", Href: "http://example.com/", Extra: []Attr{{Space: extNS, Local: "a", Value: bad}}}}},
	}
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	if err := enc.WriteHead(&Head{MD: Metadata{Capability: CapResourceList}}); err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		if err := enc.WriteEntry(&entries[i]); !errors.Is(err, ErrInvalidXMLChar) {
			t.Errorf("entry %d: error %v, want ErrInvalidXMLChar", i, err)
		}
	}
	if err := enc.WriteEntry(&Entry{Loc: "http://example.com/good"}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	want := xmlDecl + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcelist"/>
<url><loc>http://example.com/good</loc></url>
</urlset>
`
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}

	// A head is checked too.
	for _, h := range []Head{
		{MD: Metadata{Capability: Capability(bad)}},
		{Links: []Link{{Rel: RelUp, Href: bad}}},
		{MD: Metadata{Extra: []Attr{{Space: bad, Local: "a"}}}},
	} {
		if err := NewEncoder(io.Discard).WriteHead(&h); !errors.Is(err, ErrInvalidXMLChar) {
			t.Errorf("WriteHead(%+v) error %v, want ErrInvalidXMLChar", h, err)
		}
	}
}

func TestInvalidName(t *testing.T) {
	for _, a := range []Attr{
		{Space: extNS, Local: ""},
		{Space: extNS, Local: "a:b"},
		{Space: extNS, Local: "1a"},
		{Space: extNS, Local: "a b"},
		{Space: "", Local: "xmlns"},
		{Space: xmlnsNS, Local: "p"},
	} {
		e := Entry{Loc: "http://example.com/a", MD: Metadata{Extra: []Attr{a}}}
		enc := NewEncoder(io.Discard)
		if err := enc.WriteHead(&Head{}); err != nil {
			t.Fatal(err)
		}
		if err := enc.WriteEntry(&e); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Extra %+v: error %v, want ErrInvalidName", a, err)
		}
	}
}

func TestAttributeOrder(t *testing.T) {
	ts := tm("2013-01-02T13:00:00Z")
	e := Entry{
		Loc: "http://example.com/a", LastMod: ts, ChangeFreq: "daily", Priority: "0.8",
		MD: Metadata{Capability: CapResourceList, Change: Updated, At: ts, Completed: ts, From: ts, Until: ts,
			DateTime: ts, Modified: ts, Hashes: Hashes{{MD5, "aa"}}, Length: -1, HasLength: true, Type: "t/t",
			Encoding: "gzip", Path: "/p", Extra: []Attr{{Space: extNS, Local: "z", Value: "1"}, {Space: extNS, Local: "a", Value: "2"}}},
		Links: []Link{{Rel: "r", Href: "h", Modified: ts, Hashes: Hashes{{SHA1, "bb"}, {SHA256, "cc"}}, Length: 5, HasLength: true,
			Type: "t/t", Encoding: "e", Path: "/p", Pri: 7, Profile: "pr", Extra: []Attr{{Space: extNS, Local: "q", Value: "3"}}}},
	}
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	if err := enc.WriteHead(&Head{}); err != nil {
		t.Fatal(err)
	}
	if err := enc.WriteEntry(&e); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	const T = "2013-01-02T13:00:00Z"
	want := `<url><loc>http://example.com/a</loc><lastmod>` + T + `</lastmod><changefreq>daily</changefreq><priority>0.8</priority>` +
		`<rs:md capability="resourcelist" change="updated" at="` + T + `" completed="` + T + `" from="` + T + `" until="` + T +
		`" datetime="` + T + `" modified="` + T + `" hash="md5:aa" length="-1" type="t/t" encoding="gzip" path="/p"` +
		` xmlns:ns1="` + extNS + `" ns1:z="1" ns1:a="2"/>` +
		`<rs:ln rel="r" href="h" modified="` + T + `" hash="sha-1:bb sha-256:cc" length="5" type="t/t" encoding="e" path="/p" pri="7" profile="pr"` +
		` xmlns:ns1="` + extNS + `" ns1:q="3"/></url>` + "\n"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	checkWellFormed(t, buf.Bytes())
}

func TestOmitEmpty(t *testing.T) {
	tests := []struct {
		e    Entry
		want string
	}{
		{Entry{Loc: "http://example.com/a"}, `<url><loc>http://example.com/a</loc></url>`},
		{Entry{}, `<url><loc></loc></url>`},
		{Entry{Loc: "l", MD: Metadata{Length: 5}}, `<url><loc>l</loc></url>`},
		{Entry{Loc: "l", MD: Metadata{HasLength: true}}, `<url><loc>l</loc><rs:md length="0"/></url>`},
		{Entry{Loc: "l", MD: Metadata{Hashes: Hashes{}}}, `<url><loc>l</loc></url>`},
		{Entry{Loc: "l", Links: []Link{{}}}, `<url><loc>l</loc><rs:ln/></url>`},
		{Entry{Loc: "l", Links: []Link{{Rel: "a", Href: "b", Length: 3, Pri: 0}}}, `<url><loc>l</loc><rs:ln rel="a" href="b"/></url>`},
	}
	for _, tt := range tests {
		enc := NewEncoder(nil)
		b, err := enc.appendEntry(nil, &tt.e)
		if err != nil || string(b) != tt.want+"\n" {
			t.Errorf("%+v: got %q, %v; want %q", tt.e, b, err, tt.want)
		}
	}
}

func TestNamespaces(t *testing.T) {
	const other, third = "http://example.org/other/", "http://example.org/third/"
	h := Head{
		MD:    Metadata{Capability: CapResourceList, Extra: []Attr{{Space: extNS, Local: "a", Value: "1"}}},
		Links: []Link{{Rel: RelUp, Href: "http://example.com/up", Extra: []Attr{{Space: other, Local: "b", Value: "2"}, {Space: extNS, Local: "c", Value: "3"}}}},
	}
	e := Entry{Loc: "http://example.com/x", MD: Metadata{Extra: []Attr{
		{Space: extNS, Local: "d", Value: "4"},     // declared on the root: ns1
		{Space: third, Local: "e", Value: "5"},     // declared on rs:md: ns3
		{Space: RSNS, Local: "f", Value: "6"},      // rs:
		{Space: xmlNS, Local: "lang", Value: "en"}, // xml:, never declared
		{Space: "", Local: "g", Value: "7"},        // unprefixed
		{Space: third, Local: "h", Value: "8"},     // declared once
		{Space: SitemapNS, Local: "i", Value: "9"}, // attributes have no default namespace: ns4
	}}}
	doc := encodeDoc(t, &h, []Entry{e, e})
	s := string(doc)
	for _, want := range []string{
		`<urlset xmlns="` + SitemapNS + `" xmlns:rs="` + RSNS + `" xmlns:ns1="` + extNS + `" xmlns:ns2="` + other + `">`,
		`<rs:md capability="resourcelist" ns1:a="1"/>`,
		`<rs:ln rel="up" href="http://example.com/up" ns2:b="2" ns1:c="3"/>`,
		`<url><loc>http://example.com/x</loc><rs:md xmlns:ns3="` + third + `" xmlns:ns4="` + SitemapNS +
			`" ns1:d="4" ns3:e="5" rs:f="6" xml:lang="en" g="7" ns3:h="8" ns4:i="9"/></url>`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %s in\n%s", want, s)
		}
	}
	if n := strings.Count(s, "xmlns:ns3="); n != 2 {
		t.Errorf("ns3 declared %d times, want once per entry", n)
	}
	// encoding/xml resolves every attribute to the intended namespace.
	var got []xml.Attr
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "md" {
			for _, a := range se.Attr {
				if a.Name.Space != "xmlns" {
					got = append(got, a)
				}
			}
		}
	}
	want := []xml.Attr{{Name: xml.Name{Local: "capability"}, Value: "resourcelist"}, {Name: xml.Name{Space: extNS, Local: "a"}, Value: "1"}}
	for range 2 {
		for _, a := range e.MD.Extra {
			want = append(want, xml.Attr{Name: xml.Name{Space: a.Space, Local: a.Local}, Value: a.Value})
		}
	}
	if len(got) != len(want) {
		t.Fatalf("attributes\n%v\nwant\n%v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("attribute %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestEncodeEmptyDocuments(t *testing.T) {
	for _, h := range []Head{
		{MD: Metadata{Capability: CapChangeList, From: tm("2013-01-03T00:00:00Z")}},
		{Root: SitemapIndex, MD: Metadata{Capability: CapChangeList, From: tm("2013-01-03T00:00:00Z")}},
		{},
	} {
		doc := encodeDoc(t, &h, nil)
		root := h.Root.String()
		want := xmlDecl + `<` + root + ` xmlns="` + SitemapNS + `" xmlns:rs="` + RSNS + `">` + "\n"
		if !h.MD.Capability.IsChange() {
			want += "</" + root + ">\n"
		} else {
			want += `<rs:md capability="changelist" from="2013-01-03T00:00:00Z"/>` + "\n</" + root + ">\n"
		}
		if string(doc) != want {
			t.Errorf("got\n%s\nwant\n%s", doc, want)
		}
		checkWellFormed(t, doc)
	}
}

func TestEncoderState(t *testing.T) {
	enc := NewEncoder(io.Discard)
	if err := enc.WriteEntry(&Entry{}); !errors.Is(err, ErrEncoderState) {
		t.Errorf("WriteEntry before WriteHead: %v", err)
	}
	if err := enc.Close(); !errors.Is(err, ErrEncoderState) {
		t.Errorf("Close before WriteHead: %v", err)
	}
	if err := enc.WriteHead(&Head{}); err != nil {
		t.Fatal(err)
	}
	if err := enc.WriteHead(&Head{}); !errors.Is(err, ErrEncoderState) {
		t.Errorf("second WriteHead: %v", err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := enc.WriteEntry(&Entry{}); !errors.Is(err, ErrEncoderState) {
		t.Errorf("WriteEntry after Close: %v", err)
	}
}

type failWriter struct {
	n   int // bytes accepted before failing
	err error
}

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) <= w.n {
		w.n -= len(p)
		return len(p), nil
	}
	n := w.n
	w.n = 0
	return n, w.err
}

func TestEncoderWriteError(t *testing.T) {
	boom := errors.New("boom")
	enc := NewEncoder(&failWriter{n: 100, err: boom})
	if err := enc.WriteHead(&Head{}); err != nil {
		t.Fatal(err)
	}
	e := Entry{Loc: strings.Repeat("http://example.com/", 100)}
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		err = enc.WriteEntry(&e)
	}
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want boom", err)
	}
	if err2 := enc.WriteEntry(&e); !errors.Is(err2, boom) {
		t.Errorf("later WriteEntry: %v, want the sticky error", err2)
	}
	if err2 := enc.Close(); !errors.Is(err2, boom) {
		t.Errorf("Close: %v, want the sticky error", err2)
	}
}

func TestTimesAsWritten(t *testing.T) {
	for _, s := range []string{"2013", "2013-01", "2013-01-02", "2013-01-02T03:04Z", "2013-01-02T03:04:05+05:30",
		"2013-01-02T03:04:05.1Z", "2013-01-02T03:04:05.000000001-01:00"} {
		b, err := NewEncoder(nil).appendEntry(nil, &Entry{Loc: "l", LastMod: tm(s), MD: Metadata{DateTime: tm(s)}})
		want := `<url><loc>l</loc><lastmod>` + s + `</lastmod><rs:md datetime="` + s + `"/></url>` + "\n"
		if err != nil || string(b) != want {
			t.Errorf("got %s, %v; want %s", b, err, want)
		}
	}
	// NewTime writes what time.Time holds, to the second or fraction.
	b, _ := NewEncoder(nil).appendEntry(nil, &Entry{Loc: "l", LastMod: NewTime(time.Date(2020, 2, 29, 23, 59, 59, 250e6, time.UTC))})
	if !bytes.Contains(b, []byte("<lastmod>2020-02-29T23:59:59.25Z</lastmod>")) {
		t.Errorf("got %s", b)
	}
}

func TestEncoderZeroAllocs(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	entries := benchEntries(100)
	enc := NewEncoder(io.Discard)
	if err := enc.WriteHead(benchHead()); err != nil {
		t.Fatal(err)
	}
	i := 0
	allocs := testing.AllocsPerRun(10000, func() {
		if err := enc.WriteEntry(&entries[i%len(entries)]); err != nil {
			t.Fatal(err)
		}
		i++
	})
	if allocs != 0 {
		t.Errorf("%v allocations per entry, want 0", allocs)
	}
}
