package rs

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// memFS collects what a Splitter writes.
type memFS struct {
	docs   map[string]*memFile
	order  []string
	create error // returned by Create when set
	close  error // returned by Close when set
}

type memFile struct {
	bytes.Buffer
	closed bool
	err    error
}

func (f *memFile) Close() error {
	if f.closed {
		return errors.New("closed twice")
	}
	f.closed = true
	return f.err
}

func newMemFS() *memFS { return &memFS{docs: map[string]*memFile{}} }

func (fs *memFS) Create(url string) (io.WriteCloser, error) {
	if fs.create != nil {
		return nil, fs.create
	}
	if _, ok := fs.docs[url]; ok {
		return nil, fmt.Errorf("%s created twice", url)
	}
	f := &memFile{err: fs.close}
	fs.docs[url] = f
	fs.order = append(fs.order, url)
	return f, nil
}

func (fs *memFS) all() map[string][]byte {
	m := map[string][]byte{}
	for u, f := range fs.docs {
		m[u] = f.Bytes()
	}
	return m
}

// parsed is a document read back with encoding/xml.
type parsed struct {
	root  string
	md    map[string]string
	links []map[string]string
	items []parsedItem
}

type parsedItem struct {
	loc string
	md  map[string]string
}

func parseDoc(t testing.TB, doc []byte) parsed {
	t.Helper()
	var p parsed
	d := xml.NewDecoder(bytes.NewReader(doc))
	depth := 0
	inLoc := false
	attrs := func(se xml.StartElement) map[string]string {
		m := map[string]string{}
		for _, a := range se.Attr {
			if a.Name.Space == "" {
				m[a.Name.Local] = a.Value
			}
		}
		return m
	}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return p
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			depth++
			switch {
			case depth == 1:
				p.root = tok.Name.Local
			case depth == 2 && tok.Name.Space == RSNS && tok.Name.Local == "md":
				p.md = attrs(tok)
			case depth == 2 && tok.Name.Space == RSNS && tok.Name.Local == "ln":
				p.links = append(p.links, attrs(tok))
			case depth == 2:
				p.items = append(p.items, parsedItem{})
			case depth == 3 && tok.Name.Local == "loc":
				inLoc = true
			case depth == 3 && tok.Name.Space == RSNS && tok.Name.Local == "md":
				p.items[len(p.items)-1].md = attrs(tok)
			}
		case xml.EndElement:
			depth--
			inLoc = false
		case xml.CharData:
			if inLoc {
				p.items[len(p.items)-1].loc += string(tok)
			}
		}
	}
}

func (p parsed) link(rel string) string {
	for _, l := range p.links {
		if l["rel"] == rel {
			return l["href"]
		}
	}
	return ""
}

const (
	listURL = "https://example.com/list.xml"
	upURL   = "https://example.com/capabilitylist.xml"
)

func partURL(n int) string { return "https://example.com/list-part" + strconv.Itoa(n) + ".xml" }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func second(i int) Time { return NewTime(t0.Add(time.Duration(i) * time.Second)) }

// changeEntries returns n change list entries, one second apart from
// second(1) on.
func changeEntries(n int) []Entry {
	es := make([]Entry, n)
	for i := range es {
		es[i] = Entry{Loc: "https://example.com/res/" + strconv.Itoa(i), MD: Metadata{Change: Updated, DateTime: second(i + 1)}}
	}
	return es
}

func split(t *testing.T, cfg SplitConfig, entries []Entry) (Result, *memFS) {
	t.Helper()
	fs := newMemFS()
	cfg.Create = fs.Create
	if cfg.URL == "" {
		cfg.URL = listURL
	}
	if cfg.PartURL == nil {
		cfg.PartURL = partURL
	}
	s, err := NewSplitter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		if err := s.Add(&entries[i]); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.Close()
	if err != nil {
		t.Fatal(err)
	}
	for u, f := range fs.docs {
		if !f.closed {
			t.Errorf("%s not closed", u)
		}
	}
	if strings.Join(fs.order, " ") != strings.Join(res.URLs, " ") {
		t.Errorf("Result.URLs %v, written %v", res.URLs, fs.order)
	}
	return res, fs
}

func TestSplitterCounts(t *testing.T) {
	const N = 3
	v := newXSDValidator(t)
	heads := map[string]Head{
		"resourcelist": {MD: Metadata{Capability: CapResourceList, At: second(0), Completed: second(100)},
			Links: []Link{{Rel: RelUp, Href: upURL}}},
		"changelist-open": {MD: Metadata{Capability: CapChangeList, From: second(0)},
			Links: []Link{{Rel: RelUp, Href: upURL}}},
		"changelist-closed": {MD: Metadata{Capability: CapChangeList, From: second(0), Until: second(1000)},
			Links: []Link{{Rel: RelUp, Href: upURL}, {Rel: RelDescribedBy, Href: "https://example.com/about"}}},
	}
	for name, head := range heads {
		for _, n := range []int{0, 1, N, N + 1, 3*N + 5} {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				entries := changeEntries(n)
				res, fs := split(t, SplitConfig{Head: head, MaxEntries: N}, entries)
				wantParts := max(1, (n+N-1)/N)
				if res.Parts != wantParts || res.Entries != int64(n) || res.Indexed != (wantParts > 1) {
					t.Fatalf("Result %+v, want %d parts, %d entries", res, wantParts, n)
				}
				if n > 0 {
					v.MustValidate(t, fs.all())
				}
				if wantParts == 1 {
					if len(res.URLs) != 1 || res.URLs[0] != listURL {
						t.Fatalf("URLs %v", res.URLs)
					}
					// The single document has exactly the given head.
					want := encodeDoc(t, &head, entries)
					if got := fs.docs[listURL].Bytes(); !bytes.Equal(got, want) {
						t.Errorf("got\n%s\nwant\n%s", got, want)
					}
					return
				}
				checkSplit(t, head, entries, N, res, fs)
			})
		}
	}
}

// checkSplit checks the parts and the index of a split document.
func checkSplit(t *testing.T, head Head, entries []Entry, maxEntries int, res Result, fs *memFS) {
	t.Helper()
	if len(res.URLs) != res.Parts+1 || res.URLs[res.Parts] != listURL {
		t.Fatalf("URLs %v", res.URLs)
	}
	isChange := head.MD.Capability.IsChange()
	next := 0
	var parts []parsed
	for i, u := range res.URLs[:res.Parts] {
		if u != partURL(i+1) {
			t.Errorf("part %d at %s", i+1, u)
		}
		p := parseDoc(t, fs.docs[u].Bytes())
		parts = append(parts, p)
		if p.root != "urlset" || p.md["capability"] != string(head.MD.Capability) {
			t.Errorf("part %d: root %s, md %v", i+1, p.root, p.md)
		}
		if p.link(RelUp) != upURL || p.link(RelIndex) != listURL || len(p.links) != len(head.Links)+1 {
			t.Errorf("part %d: links %v", i+1, p.links)
		}
		if len(p.items) == 0 || len(p.items) > maxEntries {
			t.Errorf("part %d: %d items", i+1, len(p.items))
		}
		for _, it := range p.items {
			if it.loc != entries[next].Loc {
				t.Errorf("part %d: item %s, want %s", i+1, it.loc, entries[next].Loc)
			}
			next++
		}
		if isChange {
			// Contiguous intervals: part 1 starts at the head's from, part
			// k+1 starts where part k ends, at its first entry's datetime;
			// the last ends at the head's until (absent if open).
			wantFrom := head.MD.From.String()
			if i > 0 {
				wantFrom = p.items[0].md["datetime"]
				if prev := parts[i-1].md["until"]; prev != wantFrom {
					t.Errorf("part %d until %s, part %d from %s", i, prev, i+1, wantFrom)
				}
			}
			if p.md["from"] != wantFrom {
				t.Errorf("part %d: from %q, want %q", i+1, p.md["from"], wantFrom)
			}
			until, ok := p.md["until"]
			if i == res.Parts-1 && (until != head.MD.Until.String() || ok != !head.MD.Until.IsZero()) {
				t.Errorf("last part: until %q, want %q", until, head.MD.Until.String())
			}
			for _, it := range p.items {
				if it.md["datetime"] < p.md["from"] || ok && it.md["datetime"] > until {
					t.Errorf("part %d: datetime %s outside %s..%s", i+1, it.md["datetime"], p.md["from"], until)
				}
			}
			if _, ok := p.md["at"]; ok {
				t.Errorf("part %d has at", i+1)
			}
		} else {
			if p.md["at"] != head.MD.At.String() || p.md["completed"] != head.MD.Completed.String() {
				t.Errorf("part %d: md %v", i+1, p.md)
			}
		}
	}
	if next != len(entries) {
		t.Errorf("%d entries in parts, want %d", next, len(entries))
	}

	idx := parseDoc(t, fs.docs[listURL].Bytes())
	if idx.root != "sitemapindex" || len(idx.items) != res.Parts {
		t.Fatalf("index: root %s, %d items", idx.root, len(idx.items))
	}
	if len(idx.links) != len(head.Links) || idx.link(RelUp) != upURL || idx.link(RelIndex) != "" {
		t.Errorf("index links %v", idx.links)
	}
	wantMD := map[string]string{"capability": string(head.MD.Capability)}
	for k, tm := range map[string]Time{"at": head.MD.At, "completed": head.MD.Completed, "from": head.MD.From, "until": head.MD.Until} {
		if !tm.IsZero() {
			wantMD[k] = tm.String()
		}
	}
	if fmt.Sprint(idx.md) != fmt.Sprint(wantMD) {
		t.Errorf("index md %v, want %v", idx.md, wantMD)
	}
	for i, it := range idx.items {
		if it.loc != partURL(i+1) {
			t.Errorf("index item %d: loc %s", i, it.loc)
		}
		want := map[string]string{}
		for _, k := range []string{"at", "completed", "from", "until"} {
			if v, ok := parts[i].md[k]; ok {
				want[k] = v
			}
		}
		if fmt.Sprint(it.md) != fmt.Sprint(want) {
			t.Errorf("index item %d: md %v, want %v", i, it.md, want)
		}
	}
}

func TestSplitterMaxBytes(t *testing.T) {
	head := Head{MD: Metadata{Capability: CapChangeList, From: second(0), Until: second(1000)}, Links: []Link{{Rel: RelUp, Href: upURL}}}
	entries := changeEntries(20)
	one, err := NewEncoder(nil).appendEntry(nil, &entries[0])
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSplitter(SplitConfig{Head: head, URL: listURL, Create: newMemFS().Create})
	if err != nil {
		t.Fatal(err)
	}
	// Room for the head and three entries (entries 0..9 share a size).
	maxBytes := s.reserve + 3*int64(len(one))
	res, fs := split(t, SplitConfig{Head: head, MaxBytes: maxBytes}, entries)
	if res.Parts < 6 || !res.Indexed {
		t.Fatalf("Result %+v: want the size limit to split", res)
	}
	for _, u := range res.URLs[:res.Parts] {
		if n := int64(fs.docs[u].Len()); n > maxBytes {
			t.Errorf("%s: %d bytes > MaxBytes %d", u, n, maxBytes)
		}
	}
	if n := len(parseDoc(t, fs.docs[partURL(1)].Bytes()).items); n != 3 {
		t.Errorf("part 1 has %d entries, want 3", n)
	}
	checkSplit(t, head, entries, 3, res, fs)
	newXSDValidator(t).MustValidate(t, fs.all())

	// An entry larger than MaxBytes alone is refused; the Splitter goes on.
	s, err = NewSplitter(SplitConfig{Head: head, URL: listURL, Create: fs.Create, MaxBytes: maxBytes})
	if err != nil {
		t.Fatal(err)
	}
	big := Entry{Loc: "https://example.com/" + strings.Repeat("x", int(maxBytes))}
	if err := s.Add(&big); !errors.Is(err, ErrEntryTooLarge) {
		t.Errorf("Add(big): %v, want ErrEntryTooLarge", err)
	}
	if err := s.Add(&Entry{Loc: "bad\x00"}); !errors.Is(err, ErrInvalidXMLChar) {
		t.Errorf("Add(bad): %v, want ErrInvalidXMLChar", err)
	}
	if err := s.Add(&entries[0]); err != nil {
		t.Errorf("Add after refused entries: %v", err)
	}
}

func TestSplitterSpool(t *testing.T) {
	// The same output whether a part is spooled in memory or in a file,
	// and the temporary file is removed.
	head := Head{MD: Metadata{Capability: CapResourceList, At: second(0)}, Links: []Link{{Rel: RelUp, Href: upURL}}}
	entries := changeEntries(25)
	_, want := split(t, SplitConfig{Head: head, MaxEntries: 10}, entries)

	dir := t.TempDir()
	fs := newMemFS()
	s, err := NewSplitter(SplitConfig{Head: head, URL: listURL, PartURL: partURL, Create: fs.Create, MaxEntries: 10, TempDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s.sp.limit = 200 // a few entries
	for i := range entries {
		if err := s.Add(&entries[i]); err != nil {
			t.Fatal(err)
		}
		if i == 5 && !s.sp.onFile {
			t.Error("spool still in memory")
		}
	}
	if _, err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(fs.all()) != fmt.Sprint(want.all()) {
		t.Error("output differs when spooled to a file")
	}
	if ls, _ := os.ReadDir(dir); len(ls) != 0 {
		t.Errorf("temporary files left: %v", ls)
	}
}

func TestSplitterBoundaryWithoutEventTime(t *testing.T) {
	// A part whose first entry has no datetime or lastmod starts at the
	// latest time seen before it.
	head := Head{MD: Metadata{Capability: CapChangeList, From: second(0)}, Links: []Link{{Rel: RelUp, Href: upURL}}}
	entries := changeEntries(4)
	entries[2].MD.DateTime = Time{}
	entries[3].MD.DateTime = Time{}
	entries[3].LastMod = second(9) // 1.0 style: lastmod is the event time
	res, fs := split(t, SplitConfig{Head: head, MaxEntries: 1}, entries)
	want := []string{"0", "2", "2", "9"}
	for i, u := range res.URLs[:res.Parts] {
		p := parseDoc(t, fs.docs[u].Bytes())
		if p.md["from"] != second(mustAtoi(want[i])).String() {
			t.Errorf("part %d: from %s, want second %s", i+1, p.md["from"], want[i])
		}
	}
}

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

func TestSplitterExistingIndexLinkAndExtra(t *testing.T) {
	// A rel="index" root link of the head is replaced in the parts, kept
	// in a single document; extension namespaces of the head and of the
	// entries come out right in both.
	head := Head{
		MD: Metadata{Capability: CapResourceList, At: second(0)},
		Links: []Link{{Rel: RelUp, Href: upURL},
			{Rel: RelIndex, Href: "https://example.com/old-index.xml", Extra: []Attr{{Space: "http://example.org/a/", Local: "x", Value: "1"}}}},
	}
	entries := changeEntries(3)
	for i := range entries {
		entries[i].MD.Change = ""
		entries[i].MD.Extra = []Attr{{Space: "http://example.org/b/", Local: "y", Value: strconv.Itoa(i)}}
	}
	for _, maxEntries := range []int{10, 2} {
		res, fs := split(t, SplitConfig{Head: head, MaxEntries: maxEntries}, entries)
		for _, u := range res.URLs[:res.Parts] {
			doc := fs.docs[u].Bytes()
			checkWellFormed(t, doc)
			p := parseDoc(t, doc)
			wantIndex := "https://example.com/old-index.xml"
			if res.Indexed {
				wantIndex = listURL
			}
			if p.link(RelIndex) != wantIndex || len(p.links) != 2 {
				t.Errorf("%s: links %v", u, p.links)
			}
			// Every extension attribute resolves to its namespace, although
			// the single document reuses prefix ns1 for namespace a on the
			// root and b on each item's rs:md.
			got := extraAttrs(t, doc)
			want := []xml.Attr{}
			if !res.Indexed {
				want = append(want, xml.Attr{Name: xml.Name{Space: "http://example.org/a/", Local: "x"}, Value: "1"})
			}
			for _, it := range p.items {
				i := mustAtoi(strings.TrimPrefix(it.loc, "https://example.com/res/"))
				want = append(want, xml.Attr{Name: xml.Name{Space: "http://example.org/b/", Local: "y"}, Value: strconv.Itoa(i)})
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: extension attributes %v, want %v\n%s", u, got, want, doc)
			}
		}
	}
}

func TestSplitterErrors(t *testing.T) {
	head := Head{MD: Metadata{Capability: CapResourceList, At: second(0)}}
	for _, cfg := range []SplitConfig{
		{Head: head, Create: newMemFS().Create},
		{Head: head, URL: listURL},
		{Head: Head{Root: SitemapIndex}, URL: listURL, Create: newMemFS().Create},
		{Head: head, URL: listURL, Create: newMemFS().Create, MaxEntries: -1},
		{Head: Head{MD: Metadata{Capability: "x\x00"}}, URL: listURL, Create: newMemFS().Create},
	} {
		if _, err := NewSplitter(cfg); err == nil {
			t.Errorf("NewSplitter(%+v) succeeded", cfg)
		}
	}

	s, err := NewSplitter(SplitConfig{Head: head, URL: listURL, Create: newMemFS().Create})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(&Entry{Loc: "https://example.com/a"}); !errors.Is(err, ErrEncoderState) {
		t.Errorf("Add after Close: %v, want ErrEncoderState", err)
	}

	boom := errors.New("boom")
	for _, tc := range []struct {
		name       string
		fs         *memFS
		n, failAdd int // entries, and the Add expected to fail (-1: Close)
	}{
		{"create/single", &memFS{docs: map[string]*memFile{}, create: boom}, 1, -1},
		{"create/part", &memFS{docs: map[string]*memFile{}, create: boom}, 3, 2},
		{"close/single", &memFS{docs: map[string]*memFile{}, close: boom}, 1, -1},
		{"close/part", &memFS{docs: map[string]*memFile{}, close: boom}, 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSplitter(SplitConfig{Head: head, URL: listURL, Create: tc.fs.Create, MaxEntries: 2})
			if err != nil {
				t.Fatal(err)
			}
			entries := changeEntries(tc.n)
			for i := range entries {
				err := s.Add(&entries[i])
				if i == tc.failAdd {
					if !errors.Is(err, boom) {
						t.Fatalf("Add %d: %v, want boom", i, err)
					}
					if err := s.Add(&entries[0]); !errors.Is(err, boom) {
						t.Errorf("Add after error: %v", err)
					}
					break
				}
				if err != nil {
					t.Fatalf("Add %d: %v", i, err)
				}
			}
			if _, err := s.Close(); !errors.Is(err, boom) {
				t.Errorf("Close: %v, want boom", err)
			}
			if _, err := s.Close(); !errors.Is(err, boom) {
				t.Errorf("second Close: %v, want boom", err)
			}
			for u, f := range tc.fs.docs {
				if !f.closed {
					t.Errorf("%s not closed", u)
				}
			}
		})
	}
}

func TestDefaultPartURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://example.com/resourcelist.xml": "https://example.com/resourcelist-2.xml",
		"https://example.com/changes":          "https://example.com/changes-2",
	} {
		if got := defaultPartURL(in)(2); got != want {
			t.Errorf("defaultPartURL(%q)(2) = %q, want %q", in, got, want)
		}
	}
}

// extraAttrs returns the namespaced attributes of rs:md and rs:ln elements,
// namespace declarations left out, as encoding/xml resolves them.
func extraAttrs(t testing.TB, doc []byte) []xml.Attr {
	t.Helper()
	var got []xml.Attr
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Space == RSNS {
			for _, a := range se.Attr {
				if a.Name.Space != "" && a.Name.Space != "xmlns" {
					got = append(got, a)
				}
			}
		}
	}
}
