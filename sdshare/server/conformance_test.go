package server

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare"
	"github.com/resourcesync-go/resourcesync/source/store"
)

const label = "<http://www.w3.org/2000/01/rdf-schema#label>"

// fixture: labels, a blank-node chain with a cycle, an IRI object (not
// followed), and a blank-node subject no resource reaches.
var fixture = strings.Join([]string{
	`<http://ex/a> ` + label + ` "Alpha" .`,
	`<http://ex/a> <http://ex/p> _:b1 .`,
	`_:b1 <http://ex/q> _:b2 .`,
	`_:b2 <http://ex/q> _:b1 .`,
	`_:b2 <http://ex/v> "deep"@en .`,
	`<http://ex/b> <http://ex/p> <http://ex/a> .`,
	`<http://ex/b> <http://ex/n> "2"^^<http://www.w3.org/2001/XMLSchema#integer> .`,
	`<http://ex/c> <http://ex/p> "c \"quoted\"\nline" .`,
	`_:orphan <http://ex/p> "orphan" .`,
}, "\n") + "\n"

// lines returns the sorted N-Triples lines of an N-Triples document,
// normalised by a parse and a write.
func lines(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for tr, err := range rdf.Parse(strings.NewReader(body), rdf.NTriples, "") {
		if err != nil {
			t.Fatalf("not N-Triples: %v\n%s", err, body)
		}
		out = append(out, ntLine(tr))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func fragmentURL(e *env, iri string) string {
	return e.base + "c/fragment?resource=" + url.QueryEscape(iri)
}

// TestConformance checks every SD-SRV rule that can be seen from outside,
// over HTTP, on every state backend; each subtest is named by its rule.
func TestConformance(t *testing.T) {
	forBackends(t, func(t *testing.T, with func(func(*Config)) func(*Config)) { testConformance(t, with(nil)) })
}

func testConformance(t *testing.T, mod func(*Config)) {
	e := newEnv(t, map[string]string{"data.nt": fixture}, mod)
	c := e.coll()
	waitFor(t, "the first snapshot", func() bool { return c.snapshotReady(c.version().key) })

	overview := e.feed(e.base)
	t.Run("SD-SRV-1", func(t *testing.T) {
		// overview -> collection -> snapshots + fragments, each a valid feed.
		col := e.feed(linksRel(overview.Entries[0].Links, sdshare.RelCollectionFeed)[0].Href)
		for _, r := range []string{sdshare.RelSnapshotsFeed, sdshare.RelFragmentsFeed} {
			n := 0
			for _, en := range col.Entries {
				for _, l := range linksRel(en.Links, r) {
					e.feed(l.Href)
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d links rel %s", n, r)
			}
		}
	})
	t.Run("SD-SRV-10", func(t *testing.T) {
		if len(overview.Entries) != 1 {
			t.Errorf("overview has %d entries, want 1", len(overview.Entries))
		}
	})
	t.Run("SD-SRV-11", func(t *testing.T) {
		l := linksRel(overview.Entries[0].Links, sdshare.RelCollectionFeed)
		if len(l) != 1 || l[0].Type != "application/atom+xml" || l[0].Href != e.base+"c/" {
			t.Errorf("collectionfeed links %v", l)
		}
	})
	t.Run("SD-SRV-12", func(t *testing.T) {
		if a := linksRel(overview.Entries[0].Links, "alternate"); len(a) != 1 || a[0].Type != "application/atom+xml" || a[0].Href != e.base+"c/" {
			t.Errorf("alternate links %v, want exactly one duplicating the collectionfeed link", a)
		}
	})
	col := e.feed(e.base + "c/")
	t.Run("SD-SRV-13", func(t *testing.T) {
		if len(col.Entries) != 2 {
			t.Fatalf("collection feed has %d entries, want 2", len(col.Entries))
		}
		for i, r := range []string{sdshare.RelSnapshotsFeed, sdshare.RelFragmentsFeed} {
			l := linksRel(col.Entries[i].Links, r)
			a := linksRel(col.Entries[i].Links, "alternate")
			if len(l) != 1 || len(a) != 1 || l[0] != (xLink{r, "application/atom+xml", l[0].Href}) || a[0].Href != l[0].Href || a[0].Type != "application/atom+xml" {
				t.Errorf("entry %d: links %v", i, col.Entries[i].Links)
			}
		}
	})
	snaps := e.feed(e.base + "c/snapshots")
	baseline, _, _ := storeBaseline(t, c)
	t.Run("SD-SRV-14", func(t *testing.T) {
		if len(snaps.Entries) != 1 {
			t.Fatalf("%d snapshot entries", len(snaps.Entries))
		}
		ls := linksRel(snaps.Entries[0].Links, sdshare.RelSnapshot)
		types := map[string]bool{}
		for _, l := range ls {
			types[l.Type] = true
			resp, body := e.get(l.Href, "Accept", l.Type)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), l.Type) {
				t.Errorf("%s (Accept %s): %s %s", l.Href, l.Type, resp.Status, resp.Header.Get("Content-Type"))
			}
			if l.Type == "application/n-triples" || l.Type == "text/plain" {
				if got, want := lines(t, string(body)), lines(t, fixture); !slices.Equal(got, want) {
					t.Errorf("snapshot %s:\n%s\nwant\n%s", l.Type, got, want)
				}
			}
		}
		for _, want := range []string{"application/n-triples", "text/plain"} {
			if !types[want] {
				t.Errorf("no snapshot link of type %s: %v", want, ls)
			}
		}
	})
	t.Run("SD-SRV-15", func(t *testing.T) {
		// A fresh server: the snapshot is the baseline.
		if got := snaps.Entries[0].updated(t); !got.Equal(baseline) {
			t.Errorf("snapshot updated %v, want the baseline %v", got, baseline)
		}
		if fr := e.fragments(e.base + "c/fragments"); len(fr) != 0 {
			t.Errorf("fresh server has %d fragment entries, want 0", len(fr))
		}
	})
	t.Run("SD-SRV-26", func(t *testing.T) {
		for _, c := range []struct{ iri, want string }{
			{"http://ex/a", strings.Join(strings.Split(fixture, "\n")[:5], "\n")},
			{"http://ex/b", strings.Join(strings.Split(fixture, "\n")[5:7], "\n")},
			{"http://ex/c", strings.Join(strings.Split(fixture, "\n")[7:8], "\n")},
		} {
			resp, body := e.get(fragmentURL(e, c.iri))
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %s", c.iri, resp.Status)
			}
			got, want := parseAll(t, string(body), rdf.NTriples), parseAll(t, c.want, rdf.NTriples)
			if _, g := canonical(got); len(got) != len(want) || string(g) != string(canonicalNT(want)) {
				t.Errorf("fragment of %s:\n%s\nwant (up to blank node labels)\n%s", c.iri, body, c.want)
			}
			// The bytes served are what the inventory describes.
			rec, err := e.coll().Store().Get(context.Background(), c.iri)
			if err != nil || rec.SHA256 != sha256.Sum256(body) || rec.Size != int64(len(body)) || rec.Type != "application/n-triples" {
				t.Errorf("inventory of %s: %+v, %v; served %d bytes", c.iri, rec, err, len(body))
			}
		}
	})
	t.Run("SD-SRV-31", func(t *testing.T) {
		u := fragmentURL(e, "http://ex/a")
		for _, c := range []struct {
			accept string
			code   int
			ctype  string
		}{
			{"", 200, "application/n-triples"},
			{"*/*", 200, "application/n-triples"},
			{"text/plain", 200, "text/plain"},
			{"application/n-triples", 200, "application/n-triples"},
			{"text/*;q=0.5, application/n-triples;q=0.1", 200, "text/plain"},
			{"image/png", 406, ""},
			{"application/json, text/html", 406, ""},
			{"application/n-triples;q=0", 406, ""},
		} {
			resp, _ := e.get(u, "Accept", c.accept)
			if resp.StatusCode != c.code || (c.ctype != "" && !strings.HasPrefix(resp.Header.Get("Content-Type"), c.ctype)) {
				t.Errorf("Accept %q: %s %q, want %d %s", c.accept, resp.Status, resp.Header.Get("Content-Type"), c.code, c.ctype)
			}
		}
		// The snapshot URL negotiates the same way.
		href := linksRel(snaps.Entries[0].Links, sdshare.RelSnapshot)[0].Href
		href, _, _ = strings.Cut(href, "?")
		if resp, _ := e.get(href, "Accept", "image/png"); resp.StatusCode != 406 {
			t.Errorf("snapshot with an unknown Accept: %s", resp.Status)
		}
		if resp, _ := e.get(href+"?format=txt", "Accept", "application/rdf+xml"); resp.StatusCode != 406 {
			t.Errorf("format=txt with Accept application/rdf+xml: %s", resp.Status)
		}
		if resp, _ := e.get(href + "?format=bogus"); resp.StatusCode != 400 {
			t.Errorf("unknown format: %s", resp.Status)
		}
	})

	// Changes: an update, a deletion, a creation, in one reload.
	e.write("data.nt", strings.Replace(strings.Replace(fixture, `"deep"@en`, `"deeper"@en`, 1),
		`<http://ex/c> <http://ex/p> "c \"quoted\"\nline" .`, `<http://ex/d> `+label+` "Delta" .`, 1))
	waitFor(t, "the changes", func() bool { return c.version().seq >= 3 })
	frags := e.fragments(e.base + "c/fragments")
	t.Run("SD-SRV-19", func(t *testing.T) {
		var got []string
		for _, en := range frags {
			got = append(got, en.Resources[0])
			if u := en.updated(t); u.Before(baseline) {
				t.Errorf("entry %s updated %v before the baseline %v", en.Resources[0], u, baseline)
			}
		}
		slices.Sort(got)
		if want := []string{"http://ex/a", "http://ex/c", "http://ex/d"}; !slices.Equal(got, want) {
			t.Errorf("entries for %v, want %v", got, want)
		}
	})
	t.Run("SD-SRV-20", func(t *testing.T) {
		for _, en := range frags {
			fl := linksRel(en.Links, sdshare.RelFragment)
			if len(fl) == 0 || len(fl) != len(linksRel(en.Links, "alternate")) {
				t.Errorf("entry %s: %d fragment links, %d alternates", en.Resources, len(fl), len(linksRel(en.Links, "alternate")))
			}
			for _, l := range fl {
				// SD-SRV-30: each target answers 200 with its own type.
				resp, _ := e.get(l.Href, "Accept", l.Type)
				if l.Type == "" || resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), l.Type) {
					t.Errorf("fragment link %v: %s %s", l, resp.Status, resp.Header.Get("Content-Type"))
				}
			}
		}
	})
	t.Run("SD-SRV-21", func(t *testing.T) {
		for _, en := range frags {
			if len(en.Resources) != 1 {
				t.Errorf("entry %v has %d sdshare:resource", en.IDs, len(en.Resources))
			}
		}
	})
	t.Run("SD-SRV-22", func(t *testing.T) {
		want := map[string]string{"http://ex/a": "Alpha", "http://ex/c": "http://ex/c", "http://ex/d": "Delta"}
		for _, en := range frags {
			if en.Titles[0] != want[en.Resources[0]] {
				t.Errorf("title of %s: %q, want %q", en.Resources[0], en.Titles[0], want[en.Resources[0]])
			}
		}
	})
	t.Run("SD-SRV-27", func(t *testing.T) {
		for _, o := range e.srv.offers {
			resp, body := e.get(fragmentURL(e, "http://ex/c")+"&format="+o.Param, "Accept", o.Type)
			if resp.StatusCode != 200 {
				t.Errorf("deleted resource, %s: %s", o.Type, resp.Status)
			}
			if o.Format == rdf.NTriples && len(strings.TrimSpace(string(body))) != 0 {
				t.Errorf("deleted resource: body %q, want an empty document", body)
			}
		}
	})
	t.Run("SD-SRV-23", func(t *testing.T) {
		at := frags[0].updated(t)
		for _, c := range []struct {
			since string
			n     int
		}{
			{at.Format(time.RFC3339Nano), len(frags)}, // inclusive
			{at.Add(-time.Nanosecond).Format(time.RFC3339Nano), len(frags)},
			{at.Add(time.Nanosecond).Format(time.RFC3339Nano), 0},
			{at.In(time.FixedZone("", -5*3600)).Format(time.RFC3339Nano), len(frags)},     // same instant, other offset
			{at.In(time.FixedZone("", 5*3600+1800)).Format(time.RFC3339Nano), len(frags)}, // and +05:30
			{at.Add(-time.Hour).In(time.FixedZone("", 3600)).Format(time.RFC3339), len(frags)},
		} {
			got := e.fragments(e.base + "c/fragments?since=" + url.QueryEscape(c.since))
			if len(got) != c.n {
				t.Errorf("since=%s: %d entries, want %d", c.since, len(got), c.n)
			}
		}
		// A '+' the client forgot to escape still means an offset.
		plus := at.In(time.FixedZone("", 3600)).Format(time.RFC3339Nano)
		if got := e.fragments(e.base + "c/fragments?since=" + plus); len(got) != len(frags) {
			t.Errorf("since=%s unescaped: %d entries", plus, len(got))
		}
	})
	t.Run("SD-SRV-24", func(t *testing.T) {
		for _, bad := range []string{"yesterday", "2026-13-01T00:00:00Z", "2026-01-01", ""} {
			resp, _ := e.get(e.base + "c/fragments?since=" + url.QueryEscape(bad))
			if resp.StatusCode != 400 {
				t.Errorf("since=%q: %s, want 400", bad, resp.Status)
			}
		}
		if resp, _ := e.get(e.base + "c/fragments?page=nonsense"); resp.StatusCode != 400 {
			t.Errorf("bad page cursor: %s, want 400", resp.Status)
		}
	})
	t.Run("SD-SRV-28", func(t *testing.T) {
		// The fragment of an updated resource is its current state.
		_, body := e.get(fragmentURL(e, "http://ex/a"))
		if !strings.Contains(string(body), `"deeper"@en`) {
			t.Errorf("fragment of a is not current:\n%s", body)
		}
	})
	t.Run("SD-SRV-15-after-changes", func(t *testing.T) {
		waitFor(t, "the new snapshot", func() bool { return c.snapshotReady(c.version().key) })
		s := e.feed(e.base + "c/snapshots")
		last := frags[len(frags)-1].updated(t)
		if got := s.Entries[0].updated(t); !got.Equal(last) {
			t.Errorf("snapshot updated %v, want the newest change %v", got, last)
		}
	})
}

func canonicalNT(ts []rdf.Triple) []byte {
	_, b := canonical(ts)
	return b
}

func storeBaseline(t *testing.T, c *Collection) (time.Time, bool, error) {
	t.Helper()
	b, ok, err := store.BaselineTime(context.Background(), c.st)
	if err != nil || !ok {
		t.Fatalf("baseline: %v %v", ok, err)
	}
	return b, ok, err
}

// TestPagingEqualTimestamps: many entries share one timestamp (one reload
// changes them all); following next links yields each exactly once, with
// and without since (SD-SRV-25).
func TestPagingEqualTimestamps(t *testing.T) {
	forBackends(t, testPagingEqualTimestamps)
}

func testPagingEqualTimestamps(t *testing.T, with func(func(*Config)) func(*Config)) {
	e := newEnv(t, map[string]string{"data.nt": "<http://ex/x> <http://ex/p> \"x\" .\n"}, with(func(c *Config) { c.PageSize = 7 }))
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "<http://ex/r%03d> <http://ex/p> \"%d\" .\n", i, i)
	}
	e.write("data.nt", b.String())
	c := e.coll()
	waitFor(t, "the changes", func() bool { return c.version().seq >= 101 })
	for _, since := range []string{"", "?since=" + url.QueryEscape(c.version().updated.Format(time.RFC3339Nano))} {
		entries := e.fragments(e.base + "c/fragments" + since)
		seen := map[string]int{}
		var ts time.Time
		for _, en := range entries {
			seen[en.Resources[0]]++
			ts = en.updated(t)
		}
		if len(seen) != 101 || len(entries) != 101 {
			t.Errorf("since %q: %d entries for %d resources, want 101 each", since, len(entries), len(seen))
		}
		if !ts.Equal(c.version().updated) {
			t.Errorf("entries at %v, want all at %v", ts, c.version().updated)
		}
		f := e.feed(e.base + "c/fragments" + since)
		if len(f.Entries) != 7 || len(linksRel(f.Links, "next")) != 1 {
			t.Errorf("first page: %d entries, next %v", len(f.Entries), linksRel(f.Links, "next"))
		}
	}
}

// TestSnapshotAccepted: while the current snapshot is being built its URL
// answers 202 with Retry-After, then 200 (SD-SRV-18); large graphs get a
// chunked snapshot feed whose chunks together are the graph (SD-SRV-16,
// SD-SRV-17).
func TestSnapshotAccepted(t *testing.T) {
	forBackends(t, testSnapshotAccepted)
}

func testSnapshotAccepted(t *testing.T, with func(func(*Config)) func(*Config)) {
	var mu sync.Mutex
	gate := make(chan struct{})
	var b strings.Builder
	for i := range 25 {
		fmt.Fprintf(&b, "<http://ex/r%02d> <http://ex/p> _:b%d .\n_:b%d <http://ex/q> \"%d\" .\n", i, i, i, i)
	}
	b.WriteString("_:lone <http://ex/q> \"lone\" .\n")
	// _:shared is reached from two resources that land in different chunks.
	b.WriteString("<http://ex/r00> <http://ex/s> _:shared .\n<http://ex/r24> <http://ex/s> _:shared .\n_:shared <http://ex/q> \"s\" .\n")
	data := b.String()
	e := newEnv(t, map[string]string{"data.nt": data}, with(func(c *Config) { c.ChunkSize = 10 }), func(s *Server) {
		s.beforeBuild = func(string) {
			mu.Lock()
			g := gate
			mu.Unlock()
			<-g
		}
	})
	snaps := e.feed(e.base + "c/snapshots")
	en := snaps.Entries[0]
	href := linksRel(en.Links, sdshare.RelSnapshot)[0].Href
	chunked := linksRel(en.Links, sdshare.RelChunkedSnapshot)
	t.Run("SD-SRV-18", func(t *testing.T) {
		for _, u := range []string{href, chunked[0].Href} {
			resp, _ := e.get(u)
			if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Retry-After") == "" {
				t.Errorf("%s while building: %s, Retry-After %q", u, resp.Status, resp.Header.Get("Retry-After"))
			}
		}
		close(gate)
		waitFor(t, "the snapshot", func() bool { resp, _ := e.get(href); return resp.StatusCode == 200 })
	})
	t.Run("SD-SRV-16", func(t *testing.T) {
		if len(chunked) != 1 || chunked[0].Type != "application/atom+xml" {
			t.Fatalf("chunked-snapshot links %v", chunked)
		}
	})
	t.Run("SD-SRV-17", func(t *testing.T) {
		f := e.feed(chunked[0].Href)
		if len(f.Entries) != 3 {
			t.Errorf("%d chunks of 25 resources by 10, want 3", len(f.Entries))
		}
		var union []string
		for _, en := range f.Entries {
			for _, l := range linksRel(en.Links, sdshare.RelSnapshotComponent) {
				resp, body := e.get(l.Href, "Accept", l.Type)
				if resp.StatusCode != 200 {
					t.Errorf("chunk %s: %s", l.Href, resp.Status)
				}
				if l.Type == "application/n-triples" {
					union = append(union, lines(t, string(body))...)
				}
			}
		}
		slices.Sort(union)
		if got, want := slices.Compact(union), lines(t, data); !slices.Equal(got, want) {
			t.Errorf("union of chunks:\n%s\nwant\n%s", got, want)
		}
	})
}
