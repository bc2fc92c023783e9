package provider

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
)

// 100,000 resources (and 1,000 deletions) listed through resumption
// tokens: every identifier exactly once, and the work of a page late in
// the list no larger than that of the first (nothing accumulates).
func TestListHundredThousand(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	ctx := context.Background()
	st, err := bolt.OpenSet(t.TempDir(), "default", &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n, deleted = 100_000, 1_000
	t0 := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	path := func(i int) string { return fmt.Sprintf("d%03d/f%06d.txt", i/1000, i) } // ascending: bbolt appends
	var b store.Batch
	b.Baseline = true
	for i := range n {
		b.Changes = append(b.Changes, store.Change{Kind: rs.Created, Time: t0, Resource: store.Resource{Path: path(i), Size: 3, Type: "text/plain", LastMod: t0}})
	}
	b.Meta = map[string][]byte{store.MetaBaseline: store.FormatBaseline(t0)}
	if _, _, err := st.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	var d store.Batch
	for i := range deleted {
		r, err := st.Get(ctx, path(i*7))
		if err != nil {
			t.Fatal(err)
		}
		d.Changes = append(d.Changes, store.Change{Kind: rs.Deleted, Time: t0.Add(time.Hour), Resource: r})
	}
	if _, _, err := st.Apply(ctx, d); err != nil {
		t.Fatal(err)
	}
	c, err := NewStoreCollection([]StoreSet{{Name: "default", Dir: t.TempDir(), Store: st, Base: "http://example.org/"}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(c, Config{BaseURL: "http://example.org/oai", PageSize: 100, Now: func() time.Time { return t0.Add(2 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	idRE := regexp.MustCompile(`<header( status="deleted")?><identifier>oai:example.org:([^<]*)</identifier>`)
	tokRE := regexp.MustCompile(`<resumptionToken[^>]*>([^<]+)</resumptionToken>`)
	seen := make(map[string]bool, n)
	dels, pages := 0, 0
	var firstAlloc, maxAlloc uint64
	q := "verb=ListIdentifiers&metadataPrefix=oai_dc"
	for {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/oai?"+q, nil))
		runtime.ReadMemStats(&m1)
		alloc := m1.TotalAlloc - m0.TotalAlloc
		if pages == 0 {
			firstAlloc = alloc
		}
		maxAlloc = max(maxAlloc, alloc)
		pages++
		body := rec.Body.String()
		ms := idRE.FindAllStringSubmatch(body, -1)
		if len(ms) == 0 {
			t.Fatalf("page %d: no header\n%s", pages, body)
		}
		for _, m := range ms {
			if seen[m[2]] {
				t.Fatalf("%s listed twice", m[2])
			}
			seen[m[2]] = true
			if m[1] != "" {
				dels++
			}
		}
		tm := tokRE.FindStringSubmatch(body)
		if tm == nil {
			break
		}
		q = "verb=ListIdentifiers&resumptionToken=" + url.QueryEscape(tm[1])
	}
	if len(seen) != n || dels != deleted {
		t.Fatalf("%d identifiers (%d deleted), want %d (%d)", len(seen), dels, n, deleted)
	}
	t.Logf("%d pages; bytes allocated per page: first %d, most %d", pages, firstAlloc, maxAlloc)
	// The deletions' pages read the journal (1,000 records, O(journal) per
	// page by design); every inventory page reads only its own part.
	if maxAlloc > 8*firstAlloc+4<<20 {
		t.Errorf("a page allocated %d bytes, the first %d: work grows along the list", maxAlloc, firstAlloc)
	}
}
