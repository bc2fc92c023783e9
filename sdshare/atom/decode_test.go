package atom

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/sdshare"
)

const fixtures = "../../testdata/sdshare"

func decodeFile(t *testing.T, rel, base string) *Feed {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, rel))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Decode(bytes.NewReader(b), base)
	if err != nil {
		t.Fatalf("Decode %s: %v", rel, err)
	}
	return f
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v.UTC()
}

func hrefs(ls []Link) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Href)
	}
	return out
}

func TestDecodeSpecExamples(t *testing.T) {
	t.Run("overview", func(t *testing.T) {
		f := decodeFile(t, "spec-examples/overview.atom", "http://example.org/")
		if len(f.Entries) != 1 {
			t.Fatalf("entries = %d, want 1", len(f.Entries))
		}
		e := f.Entries[0]
		cf := e.LinksRel(sdshare.RelCollectionFeed)
		if len(cf) != 1 || cf[0].Href != "http://example.org/collections/collection-one" || cf[0].Type != sdshare.AtomType {
			t.Errorf("collectionfeed links = %+v", cf)
		}
		if alt := e.LinksRel("alternate"); len(alt) != 1 || alt[0].Href != cf[0].Href {
			t.Errorf("alternate = %+v", alt)
		}
		if len(f.Links) == 0 || f.Links[0].Rel != "" {
			t.Errorf("feed link without rel: %+v", f.Links)
		}
		if f.ID == "" || f.Title == "" || f.Updated.IsZero() || f.Author == "" {
			t.Errorf("feed metadata missing: %+v", f)
		}
	})
	t.Run("collection", func(t *testing.T) {
		f := decodeFile(t, "spec-examples/collection.atom", "")
		if len(f.Entries) != 2 {
			t.Fatalf("entries = %d, want 2", len(f.Entries))
		}
		var frag, snap []string
		for _, e := range f.Entries {
			frag = append(frag, hrefs(e.LinksRel(sdshare.RelFragmentsFeed))...)
			snap = append(snap, hrefs(e.LinksRel(sdshare.RelSnapshotsFeed))...)
			if len(e.LinksRel("alternate")) != 1 {
				t.Errorf("entry %q: alternates %+v", e.Title, e.LinksRel("alternate"))
			}
		}
		if len(frag) != 1 || !strings.HasSuffix(frag[0], "/collection-one/fragments") {
			t.Errorf("fragments feed = %v", frag)
		}
		if len(snap) != 1 || !strings.HasSuffix(snap[0], "/collection-one/snapshots") {
			t.Errorf("snapshots feed = %v", snap)
		}
	})
	t.Run("snapshots", func(t *testing.T) {
		f := decodeFile(t, "spec-examples/snapshots.atom", "")
		if len(f.Entries) != 1 {
			t.Fatalf("entries = %d", len(f.Entries))
		}
		e := f.Entries[0]
		if want := time.Date(2008, 7, 17, 14, 4, 42, 205299000, time.UTC); !e.Updated.Equal(want) || e.Updated.Nanosecond() != 205299000 {
			t.Errorf("updated = %v, want %v", e.Updated, want)
		}
		if s := e.LinksRel(sdshare.RelSnapshot); len(s) != 1 || s[0].Type != "application/rdf+xml" || s[0].Href != "http://example.org/collections/collection-one/snapshots/0001" {
			t.Errorf("snapshot links %+v", s)
		}
		if c := e.LinksRel(sdshare.RelChunkedSnapshot); len(c) != 1 || !strings.HasSuffix(c[0].Href, "/0001/chunks") {
			t.Errorf("chunked links %+v", c)
		}
	})
	t.Run("chunked-snapshot", func(t *testing.T) {
		f := decodeFile(t, "spec-examples/chunked-snapshot.atom", "")
		if len(f.Entries) != 1 {
			t.Fatalf("entries = %d", len(f.Entries))
		}
		c := f.Entries[0].LinksRel(sdshare.RelSnapshotComponent)
		if len(c) != 1 || c[0].Type != "application/rdf+xml" || c[0].Href == "" {
			t.Errorf("snapshot-component %+v", c)
		}
	})
	t.Run("fragments-since", func(t *testing.T) {
		f := decodeFile(t, "spec-examples/fragments-since.atom", "")
		if len(f.Entries) != 1 {
			t.Fatalf("entries = %d", len(f.Entries))
		}
		e := f.Entries[0]
		if len(e.Resources) != 1 || e.Resources[0] != "http://example.org/concepts/governmentspending" {
			t.Errorf("resources %q", e.Resources)
		}
		if fl := e.LinksRel(sdshare.RelFragment); len(fl) != 1 || fl[0].Type != "application/rdf+xml" || fl[0].Href != "http://example.org/collections/collection-one/fragments?id=2321" {
			t.Errorf("fragment links %+v", fl)
		}
		if want := mustTime(t, "2008-07-17T15:55:21.971145Z"); !e.Updated.Equal(want) {
			t.Errorf("updated %v want %v", e.Updated, want)
		}
		if f.Next() != "" {
			t.Errorf("next %q", f.Next())
		}
	})
}

func TestDecodeOntopiaFeeds(t *testing.T) {
	const base = "http://localhost:8080/sdshare/"
	for _, tc := range []struct {
		file      string
		entries   int
		next      string
		updated   string // feed updated
		entryUpd  string // first entry's updated
		resources []string
	}{
		{file: "fragment-empty.xml", updated: "2011-01-07T10:14:37Z"},
		{file: "fragment-empty-2.xml", updated: "2011-01-07T10:14:37+01:00"},
		{file: "fragment-1.xml", entries: 1, updated: "2011-01-12T19:21:45Z", entryUpd: "2011-01-12T19:21:41Z", resources: []string{"http://example.org/8"}},
		{file: "fragment-precise.xml", entries: 1, entryUpd: "2011-01-12T19:21:41.235Z", resources: []string{"http://example.org/8"}},
		{file: "fragment-paged.xml", entries: 1, next: base + "fragment-paged-2.xml"},
		{file: "fragment-paged-2.xml", entries: 1, resources: []string{"http://example.org/9"}},
		{file: "collection-simple.xml", entries: 2},
		{file: "collection-paged.xml", entries: 2},
		{file: "snapshot-1.xml", entries: 1},
		{file: "push-1.xml", entries: 1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f := decodeFile(t, "ontopia-client-feeds/"+tc.file, base+tc.file)
			if len(f.Entries) != tc.entries {
				t.Errorf("entries = %d, want %d", len(f.Entries), tc.entries)
			}
			if f.Next() != tc.next {
				t.Errorf("next = %q, want %q", f.Next(), tc.next)
			}
			if tc.updated != "" && !f.Updated.Equal(mustTime(t, tc.updated)) {
				t.Errorf("feed updated = %v, want %s", f.Updated, tc.updated)
			}
			if tc.entryUpd != "" && !f.Entries[0].Updated.Equal(mustTime(t, tc.entryUpd)) {
				t.Errorf("entry updated = %v, want %s", f.Entries[0].Updated, tc.entryUpd)
			}
			if tc.resources != nil && strings.Join(f.Entries[0].Resources, " ") != strings.Join(tc.resources, " ") {
				t.Errorf("resources = %q, want %q", f.Entries[0].Resources, tc.resources)
			}
		})
	}
	// fragment-1.xml: two links, rel alternate only, relative hrefs resolved.
	f := decodeFile(t, "ontopia-client-feeds/fragment-1.xml", base+"fragment-1.xml")
	ls := f.Entries[0].Links
	if len(ls) != 2 || ls[0].Type != "application/rdf+xml" || !strings.HasSuffix(ls[0].Href, "&syntax=rdf") ||
		ls[1].Type != "application/x-tm+xml; version=1.0" || !strings.HasSuffix(ls[1].Href, "&syntax=xtm") ||
		!strings.HasPrefix(ls[0].Href, base+"fragment.jsp?") {
		t.Errorf("links %+v", ls)
	}
	if len(f.Entries[0].LinksRel("alternate")) != 2 {
		t.Error("links are alternate")
	}
	// collection-paged.xml's fragments feed is relative.
	c := decodeFile(t, "ontopia-client-feeds/collection-paged.xml", base+"collection-paged.xml")
	var ff []string
	for _, e := range c.Entries {
		for _, l := range e.Links {
			if strings.HasSuffix(l.Rel, "fragmentsfeed") {
				ff = append(ff, l.Href)
			}
		}
	}
	if len(ff) != 1 || ff[0] != base+"fragment-paged.xml" {
		t.Errorf("fragments feed %q", ff)
	}
}

func TestParseTime(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"2002-05-22T22:13:21Z", "2002-05-22T22:13:21Z"},
		{"2002-05-22T22:13:21.380Z", "2002-05-22T22:13:21.38Z"},
		{"2002-05-22T22:13:21.380123456Z", "2002-05-22T22:13:21.380123456Z"},
		{"2011-01-07T10:14:37+0100", "2011-01-07T09:14:37Z"},
		{"2011-01-07T10:14:37+01:00", "2011-01-07T09:14:37Z"},
		{"2011-01-07T10:14:37-0530", "2011-01-07T15:44:37Z"},
		{"2011-01-07T10:14:37+01", "2011-01-07T09:14:37Z"},
		{"2011-01-07t10:14:37z", "2011-01-07T10:14:37Z"},
		{" 2008-07-17T14:04:42.205299Z\n", "2008-07-17T14:04:42.205299Z"},
	} {
		got, err := ParseTime(tc.in)
		if err != nil {
			t.Errorf("ParseTime(%q): %v", tc.in, err)
			continue
		}
		if s := got.Format(time.RFC3339Nano); s != tc.want {
			t.Errorf("ParseTime(%q) = %s, want %s", tc.in, s, tc.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "2011-01-07", "2011-13-07T10:14:37Z", "2011-01-07T10:14:37+01:0x"} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q): no error", bad)
		}
	}
}

func TestDecodeBases(t *testing.T) {
	doc := `<feed xmlns="http://www.w3.org/2005/Atom" xml:base="http://a.example/x/">
  <link rel="next" href="p2"/>
  <entry xml:base="sub/">
    <link rel="http://www.sdshare.org/2012/core/fragment" href="f?id=1"/>
    <link rel="alternate" xml:base="http://b.example/" href="g"/>
    <sdshare:resource xmlns:sdshare="http://www.sdshare.org/2012/core/"> http://r.example/1 </sdshare:resource>
    <updated>2020-01-01T00:00:00Z</updated>
  </entry>
  <entry>
    <link href="/abs"/>
  </entry>
</feed>`
	f, err := Decode(strings.NewReader(doc), "http://ignored.example/feed")
	if err != nil {
		t.Fatal(err)
	}
	if f.Next() != "http://a.example/x/p2" {
		t.Errorf("next %q", f.Next())
	}
	if got := hrefs(f.Entries[0].Links); strings.Join(got, " ") != "http://a.example/x/sub/f?id=1 http://b.example/g" {
		t.Errorf("entry hrefs %v", got)
	}
	if f.Entries[0].Resources[0] != "http://r.example/1" {
		t.Errorf("resource %q", f.Entries[0].Resources)
	}
	if f.Entries[1].Links[0].Href != "http://a.example/abs" {
		t.Errorf("abs %q", f.Entries[1].Links[0].Href)
	}
	if f.Base != "http://a.example/x/" {
		t.Errorf("Base %q", f.Base)
	}
}

func TestDecodeErrors(t *testing.T) {
	big := `<feed xmlns="http://www.w3.org/2005/Atom">` + strings.Repeat("<entry><id>x</id></entry>", 100) + `</feed>`
	for _, tc := range []struct {
		name string
		doc  string
		max  int64
		want error
	}{
		{"empty", "", 1000, ErrNotAtom},
		{"rss", `<rss><channel/></rss>`, 1000, ErrNotAtom},
		{"atom without namespace", `<feed><entry/></feed>`, 1000, ErrNotAtom},
		{"truncated", `<feed xmlns="http://www.w3.org/2005/Atom"><entry>`, 1000, ErrSyntax},
		{"mismatched", `<feed xmlns="http://www.w3.org/2005/Atom"><entry></feed>`, 1000, ErrSyntax},
		{"too large", big, 500, ErrTooLarge},
		{"charset", `<?xml version="1.0" encoding="koi8-r"?><feed xmlns="http://www.w3.org/2005/Atom"/>`, 1000, ErrSyntax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeLimit(strings.NewReader(tc.doc), "", tc.max)
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := DecodeLimit(strings.NewReader(big), "", int64(len(big))); err != nil {
		t.Errorf("exactly the limit: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, dir := range []string{"spec-examples", "ontopia-client-feeds"} {
		ms, _ := filepath.Glob(filepath.Join(fixtures, dir, "*"))
		for _, m := range ms {
			b, err := os.ReadFile(m)
			if err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(`<feed xmlns="http://www.w3.org/2005/Atom" xml:base="%zz"><link href="::"/></feed>`))
	f.Add([]byte(`<feed xmlns="http://www.w3.org/2005/Atom"><updated>2011-01-07T10:14:37+0100</updated></feed>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		feed, err := DecodeLimit(bytes.NewReader(b), "http://example.org/base/", 1<<16)
		if err != nil {
			if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrNotAtom) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		for _, e := range feed.Entries {
			if !e.Updated.IsZero() && e.Updated.Location() != time.UTC {
				t.Fatalf("updated not UTC")
			}
		}
	})
}
