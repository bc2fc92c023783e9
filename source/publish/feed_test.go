package publish_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/feed"
	"github.com/resourcesync-go/resourcesync/feed/activity"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// readFeed follows the Change Discovery collection under out from its
// first page through next, checking prev and startIndex, and returns the
// activities as "Type name" and the pages' bytes.
func readFeed(t *testing.T, out, base string) (acts []string, pages map[string][]byte) {
	t.Helper()
	dir := filepath.Join(out, filepath.FromSlash(publish.FeedDir("s")))
	var c activity.Collection
	b, err := os.ReadFile(filepath.Join(dir, feed.CollectionFile))
	if err != nil || json.Unmarshal(b, &c) != nil {
		t.Fatalf("collection: %v %s", err, b)
	}
	pages = map[string][]byte{}
	var prev string
	var index int64
	for next := c.First; next != nil; {
		name := strings.TrimPrefix(next.ID, base+publish.FeedDir("s"))
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		pages[name] = b
		var p activity.Page
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		if (p.Prev == nil && prev != "") || (p.Prev != nil && p.Prev.ID != prev) || p.StartIndex != index {
			t.Errorf("%s: prev %v (want %q) startIndex %d (want %d)", name, p.Prev, prev, p.StartIndex, index)
		}
		for _, a := range p.OrderedItems {
			if a.Object != nil {
				acts = append(acts, a.Type+" "+strings.TrimPrefix(a.Object.ID, base+"r/"))
			}
		}
		if p.Next == nil && p.ID != c.Last.ID {
			t.Errorf("%s has no next but the last is %s", p.ID, c.Last.ID)
		}
		prev, index, next = p.ID, index+int64(len(p.OrderedItems)), p.Next
		if len(pages) > 100 {
			t.Fatal("endless")
		}
	}
	if index != c.TotalItems {
		t.Errorf("%d items, totalItems %d", index, c.TotalItems)
	}
	return acts, pages
}

// TestFeeds publishes a set's feeds over two runs: the baseline once, the
// journal's pages after it, full pages never rewritten, the links in the
// Capability List and the Source Description, and the tree still valid.
func TestFeeds(t *testing.T) {
	out := t.TempDir()
	base := server(t, out)
	st := openStore(t, "")
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	var b store.Batch
	b.Baseline = true
	for i := range 4 {
		b.Changes = append(b.Changes, store.Change{Kind: rs.Created, Time: t0, Resource: resource(fmt.Sprintf("b%d", i), []byte("x"), t0)})
	}
	b.Meta = map[string][]byte{store.MetaBaseline: store.FormatBaseline(t0)}
	if _, _, err := st.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	apply(t, st, "", rs.Created, "c0", "c0", t0.Add(time.Second))
	clk := &clock{t: t0.Add(time.Minute)}
	cfg := publish.Config{BaseURL: base, Out: out, Logger: quiet, Now: clk.Now, Feeds: true, FeedPageSize: 3,
		Sets: []publish.Set{{Name: "s", Store: st, ResourceBase: base + "r/"}}}
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	acts, pages1 := readFeed(t, out, base)
	if got, want := strings.Join(acts, ","), "Create b0,Create b1,Create b2,Create b3,Create c0"; got != want {
		t.Errorf("run 1:\n got %s\nwant %s", got, want)
	}
	for i := 1; i <= 4; i++ {
		apply(t, st, "", rs.Updated, "b0", fmt.Sprint(i), t0.Add(time.Duration(i+1)*time.Second))
	}
	apply(t, st, "", rs.Deleted, "b1", "", t0.Add(10*time.Second))
	clk.Set(t0.Add(2 * time.Minute))
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	acts, pages2 := readFeed(t, out, base)
	want := "Create b0,Create b1,Create b2,Create b3,Create c0,Update b0,Update b0,Update b0,Update b0,Delete b1"
	if got := strings.Join(acts, ","); got != want {
		t.Errorf("run 2:\n got %s\nwant %s", got, want)
	}
	// Baseline pages (0, 1: Refresh + 5 Creates; c0 was created before the
	// feed began): page 0 is final, page 1 (the last in run 1) only gained
	// its next link.
	if string(pages1["page-0.json"]) != string(pages2["page-0.json"]) {
		t.Errorf("page-0.json changed")
	}
	if p1, p2 := string(pages1["page-1.json"]), string(pages2["page-1.json"]); strings.Contains(p1, `"next"`) || !strings.Contains(p2, `"next"`) ||
		len(p2) <= len(p1) {
		t.Errorf("page-1.json: run 1\n%s\nrun 2\n%s", p1, p2)
	}
	if len(pages2) != 4 {
		t.Errorf("%d pages, want 4 (2 baseline, 1 full, the last)", len(pages2))
	}
	for _, doc := range []string{".well-known/resourcesync", publish.FeedDir("s")[:len(".resourcesync/s/")] + "capabilitylist.xml"} {
		raw, _ := os.ReadFile(filepath.Join(out, doc))
		if !strings.Contains(string(raw), `rel="alternate" href="`+base+publish.FeedDir("s")+`collection.json" type="application/ld+json" profile="`+activity.Profile+`"`) ||
			!strings.Contains(string(raw), `ldes.ttl" type="text/turtle"`) {
			t.Errorf("%s does not link the feeds:\n%s", doc, raw)
		}
	}
	mustWalkClean(t, base)
	// A third run with no change writes nothing.
	fi, _ := os.Stat(filepath.Join(out, publish.FeedDir("s"), "page-3.json"))
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if fi2, _ := os.Stat(filepath.Join(out, publish.FeedDir("s"), "page-3.json")); !fi2.ModTime().Equal(fi.ModTime()) {
		t.Error("the last page was rewritten without a change")
	}
}

// TestFeedsBeginAgain: a stream that begins again (the page size changed)
// keeps no page of the previous one.
func TestFeedsBeginAgain(t *testing.T) {
	out := t.TempDir()
	base := server(t, out)
	st := openStore(t, "")
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	for i := range 6 {
		apply(t, st, "", rs.Created, fmt.Sprint("f", i), "x", t0.Add(time.Duration(i)*time.Second))
	}
	cfg := publish.Config{BaseURL: base, Out: out, Logger: quiet, Now: func() time.Time { return t0.Add(time.Minute) }, Feeds: true, FeedPageSize: 2,
		Sets: []publish.Set{{Name: "s", Store: st, ResourceBase: base + "r/"}}}
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, publish.FeedDir("s"))
	if _, err := os.Stat(filepath.Join(dir, "page-3.json")); err != nil {
		t.Fatal(err) // Refresh + 6 Creates in pages of 2
	}
	cfg.FeedPageSize = 10
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "page-1.json")); err == nil {
		t.Error("a page of the previous stream is left")
	}
	acts, _ := readFeed(t, out, base)
	if len(acts) != 6 {
		t.Errorf("%d activities: %q", len(acts), acts)
	}
}
