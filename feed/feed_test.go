package feed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/feed/activity"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/memstore"
)

var t0 = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

func loc(p string) string { return "http://127.0.0.1/r/" + p }

func res(p string, size int64) store.Resource {
	return store.Resource{Path: p, Size: size, Type: "text/plain", SHA256: [32]byte{byte(size)}}
}

// fill gives st a baseline of n resources and then changes journal records.
func fill(t *testing.T, st store.Store, n, changes int) {
	t.Helper()
	ctx := context.Background()
	var b store.Batch
	b.Baseline = true
	for i := range n {
		b.Changes = append(b.Changes, store.Change{Kind: rs.Created, Time: t0, Resource: res(fmt.Sprintf("b%03d", i), 1)})
	}
	b.Meta = map[string][]byte{store.MetaBaseline: store.FormatBaseline(t0)}
	if _, _, err := st.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	addChanges(t, st, 0, changes)
}

func addChanges(t *testing.T, st store.Store, from, changes int) {
	ctx := context.Background()
	for i := from; i < from+changes; i++ {
		c := store.Change{Kind: rs.Created, Time: t0.Add(time.Duration(i+1) * time.Second), Resource: res(fmt.Sprintf("n%03d", i), int64(i))}
		if i%3 == 2 {
			c.Kind, c.Resource = rs.Deleted, res(fmt.Sprintf("n%03d", i-1), int64(i-1))
		}
		if _, _, err := st.Apply(ctx, store.Batch{Changes: []store.Change{c}}); err != nil {
			t.Fatal(err)
		}
	}
}

// render returns every page of the stream (Change Discovery JSON, LDES
// Turtle and JSON-LD), by page number.
func render(t *testing.T, st store.Store, s Stream, base map[int64][]Item) (pages, ttl, jld map[int64]string, last uint64) {
	t.Helper()
	ctx := context.Background()
	ss, _ := st.Stats(ctx)
	last = ss.LastSeq
	pages, ttl, jld = map[int64]string{}, map[int64]string{}, map[int64]string{}
	for n := range s.Pages(last) {
		items := base[n]
		if n >= s.BasePages() {
			var err error
			if items, err = s.JournalPage(ctx, st, n, loc, nil); err != nil {
				t.Fatal(err)
			}
		}
		var b1, b2, b3 bytes.Buffer
		if err := s.WritePage(&b1, n, items, last); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteNode(&b2, n, items, last); err != nil {
			t.Fatal(err)
		}
		if err := ToJSONLD(&b3, strings.NewReader(b2.String()), s.NodeURL(n)); err != nil {
			t.Fatal(err)
		}
		pages[n], ttl[n], jld[n] = b1.String(), b2.String(), b3.String()
	}
	return pages, ttl, jld, last
}

func TestStreamPages(t *testing.T) {
	ctx := context.Background()
	st := memstore.New().Open("s")
	fill(t, st, 6, 9)
	base := map[int64][]Item{}
	s, err := Baseline(ctx, st, Stream{BaseURL: "http://127.0.0.1/feed/", PageSize: 4}, loc, func(_ *Stream, n int64, items []Item) error {
		base[n] = append([]Item(nil), items...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.BaseSeq != 9 || s.BaseItems != 10 || s.BasePages() != 3 || !s.BaseTime.Equal(t0.Add(9*time.Second)) {
		t.Fatalf("baseline %+v pages %d", s, s.BasePages())
	}
	if base[0][0].Type != activity.Refresh || base[2][1].Object != loc("n006") {
		t.Fatalf("baseline items %+v", base)
	}
	addChanges(t, st, 9, 5)
	pages, ttl, jld, last := render(t, st, s, base)
	// 3 baseline pages (4, 4, 2), one full journal page (4), the last (1).
	if len(pages) != 5 || last != 14 {
		t.Fatalf("%d pages, last %d", len(pages), last)
	}
	var seen []string
	for n := range int64(len(pages)) {
		var p activity.Page
		if err := json.Unmarshal([]byte(pages[n]), &p); err != nil {
			t.Fatal(err)
		}
		if p.Type != "OrderedCollectionPage" || p.PartOf == nil || p.PartOf.ID != s.CollectionURL() {
			t.Errorf("page %d: %s", n, pages[n])
		}
		if (p.Prev == nil) != (n == 0) || (p.Next == nil) != (n == 4) {
			t.Errorf("page %d: prev %v next %v", n, p.Prev, p.Next)
		}
		if p.StartIndex != []int64{0, 4, 8, 10, 14}[n] {
			t.Errorf("page %d: startIndex %d", n, p.StartIndex)
		}
		for i, a := range p.OrderedItems {
			if i > 0 && a.EndTime.Before(p.OrderedItems[i-1].EndTime) {
				t.Errorf("page %d: not oldest first", n)
			}
			if a.Object != nil {
				seen = append(seen, a.Type+" "+strings.TrimPrefix(a.Object.ID, loc("")))
			}
		}
		// The Turtle parses, and names one member per activity with an object.
		var members int
		for tr, err := range rdf.Parse(strings.NewReader(ttl[n]), rdf.Turtle, s.NodeURL(n)) {
			if err != nil {
				t.Fatalf("node %d: %v\n%s", n, err, ttl[n])
			}
			if tr.P.Value == TreeNS+"member" {
				members++
			}
		}
		if want := len(p.OrderedItems) - map[bool]int{true: 1, false: 0}[n == 0]; members != want {
			t.Errorf("node %d: %d members, want %d", n, members, want)
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(jld[n]), &doc); err != nil {
			t.Fatalf("node %d JSON-LD: %v", n, err)
		}
	}
	want := "Create b000 Create b001 Create b002 Create b003 Create b004 Create b005 Create n000 Create n003 Create n006 Create n009 Create n010 Delete n010 Create n012 Create n013"
	if got := strings.Join(seen, " "); got != want {
		t.Errorf("activities\n got %s\nwant %s", got, want)
	}
	// Full pages never change: more changes leave their bytes as they were.
	addChanges(t, st, 14, 7)
	pages2, ttl2, jld2, _ := render(t, st, s, base)
	for n := range int64(4) {
		if pages2[n] != pages[n] || ttl2[n] != ttl[n] || jld2[n] != jld[n] {
			t.Errorf("full page %d changed", n)
		}
	}
	if pages2[4] == pages[4] || len(pages2) != 6 {
		t.Errorf("the last page did not grow (%d pages)", len(pages2))
	}
	// The last baseline page, written before the journal had a record,
	// gains its links by AddNext: the same bytes as rendered with them.
	var p0, n0 bytes.Buffer
	s.WritePage(&p0, 2, base[2], s.BaseSeq)
	s.WriteNode(&n0, 2, base[2], s.BaseSeq)
	if strings.Contains(p0.String(), `"next"`) || strings.Contains(n0.String(), "tree:relation") {
		t.Fatalf("the last page links a next one:\n%s\n%s", p0.String(), n0.String())
	}
	gp, gn, err := s.AddNext(p0.Bytes(), n0.Bytes(), 2, s.BaseTime)
	if err != nil || string(gp) != pages2[2] || string(gn) != ttl2[2] {
		t.Errorf("AddNext: %v\n%s\n%s\nwant\n%s\n%s", err, gp, gn, pages2[2], ttl2[2])
	}
	var c activity.Collection
	var b bytes.Buffer
	if err := s.WriteCollection(&b, 21); err != nil || json.Unmarshal(b.Bytes(), &c) != nil {
		t.Fatal(err)
	}
	if c.TotalItems != 10+12 || c.First.ID != s.BaseURL+"page-0.json" || c.Last.ID != s.BaseURL+"page-5.json" {
		t.Errorf("collection %s", b.String())
	}
}

// TestWritePageIsJSON: the hand-written page equals encoding/json's
// encoding of the same activity.Page, for strings that need escaping.
func TestWritePageIsJSON(t *testing.T) {
	s := Stream{BaseURL: "http://127.0.0.1/f\"eed/", PageSize: 3, BaseItems: 1, BaseSeq: 0, BaseTime: t0}
	items := []Item{
		{Key: "s1", Type: activity.Create, Object: "http://127.0.0.1/a\"b\\c\x01\u2028\xff<>&", Time: t0, Size: 3, MediaType: "text/plain; x=\"y\""},
		{Key: "s2", Type: activity.Delete, Object: "http://127.0.0.1/é", Time: t0.Add(1500 * time.Millisecond), MediaType: "image/png"},
	}
	var got bytes.Buffer
	if err := s.WritePage(&got, 1, items, 5); err != nil {
		t.Fatal(err)
	}
	p := activity.Page{Context: activity.DiscoveryContext, ID: s.BaseURL + PageFile(1), Type: "OrderedCollectionPage",
		PartOf: &activity.Ref{ID: s.CollectionURL(), Type: "OrderedCollection"}, StartIndex: 1,
		Prev: s.pageRef(0), Next: s.pageRef(2)}
	for i := range items {
		p.OrderedItems = append(p.OrderedItems, s.activityOf(&items[i], 1))
	}
	var want bytes.Buffer
	if err := encodeJSON(&want, p); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("got\n%s\nwant\n%s", got.String(), want.String())
	}
}

// FuzzAppendString: appendString is encoding/json's string encoding.
func FuzzAppendString(f *testing.F) {
	f.Add("a\"b\\c\x01\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		if got := string(appendString(nil, s)) + "\n"; got != want.String() {
			t.Errorf("%q: got %s want %s", s, got, want.String())
		}
	})
}

// keys returns the keys of a JSON object and of its objects, as "a.b".
func keys(t *testing.T, b []byte) map[string]bool {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				out[prefix+k] = true
				walk(prefix+k+".", x)
			}
		case []any:
			for _, x := range v {
				walk(prefix, x)
			}
		}
	}
	walk("", m)
	return out
}

// TestSpecExamples: our collection and pages have every key of the IIIF
// Change Discovery 1.0 specification's examples (testdata), with the same
// shapes, and a page never has an empty orderedItems (the spec's MUST).
func TestSpecExamples(t *testing.T) {
	ctx := context.Background()
	st := memstore.New().Open("s")
	fill(t, st, 3, 0)
	s, err := Baseline(ctx, st, Stream{BaseURL: "http://127.0.0.1/feed/", PageSize: 2}, loc, func(*Stream, int64, []Item) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	addChanges(t, st, 0, 5)
	var c, p bytes.Buffer
	s.WriteCollection(&c, 5)
	items, err := s.JournalPage(ctx, st, 3, loc, nil)
	if err != nil || len(items) != 2 {
		t.Fatalf("%v %d", err, len(items))
	}
	s.WritePage(&p, 3, items, 5)
	for _, tc := range []struct {
		example string
		ours    []byte
	}{{"collection.json", c.Bytes()}, {"page.json", p.Bytes()}} {
		ex, err := os.ReadFile(filepath.Join("testdata", "iiif-discovery-1.0", tc.example))
		if err != nil {
			t.Fatal(err)
		}
		have := keys(t, tc.ours)
		for k := range keys(t, ex) {
			if !have[k] {
				t.Errorf("%s: our document has no %q:\n%s", tc.example, k, tc.ours)
			}
		}
	}
	if s.Pages(s.BaseSeq) != s.BasePages() {
		t.Errorf("a page without items: %d pages, %d baseline pages", s.Pages(s.BaseSeq), s.BasePages())
	}
}
