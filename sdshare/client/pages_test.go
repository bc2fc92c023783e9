package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestPageSet(t *testing.T) {
	p := pageSet{}
	for _, u := range []string{"http://h/f", "http://h/f?page=2#x", "HTTP://H/f?page=3"} {
		if err := p.add(u, 10); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}
	// The same documents: another fragment, another case of scheme and host.
	for _, u := range []string{"http://h/f#" + strings.Repeat("y", 1<<20), "http://H/f?page=2", "http://h/f?page=3#z"} {
		if err := p.add(u, 10); !errors.Is(err, ErrFeedLoop) || len(err.Error()) > 400 {
			t.Errorf("%.80s: %.500v, want a short ErrFeedLoop", u, err)
		}
	}
	if err := p.add("http://h/f?page=4", 3); !errors.Is(err, ErrTooManyPages) {
		t.Errorf("page 4 of at most 3: %v", err)
	}
}

// The bounds of item 2 in every feed the client follows: MaxPages in a
// chunked snapshot feed, MaxRunFeedBytes across the run, MaxFeedBytes per
// page, MaxURLBytes per request; each with its error.
func TestFeedBounds(t *testing.T) {
	frag := func(id string) string {
		return entryDoc(id, "2020-06-02T00:00:00Z", []string{"http://x/" + id}, relFragment, nt, "/frag/"+id)
	}
	chunked := func(fs *fixtureServer) {
		fs.feed("/snapshots", feedDoc("",
			entryDoc("new", "2020-06-01T00:00:00Z", nil, "http://www.sdshare.org/2012/core/chunked-snapshot", "application/atom+xml", "/chunks")))
		for i := range 5 {
			fs.feed(fmt.Sprintf("/chunks?page=%d", i), feedDoc(fmt.Sprintf("/chunks?page=%d", i+1),
				entryDoc("c", "2020-06-01T00:00:00Z", nil, "http://www.sdshare.org/2012/core/snapshot-component", nt, "/chunk")))
		}
		fs.handle("/chunks", fs.routes["/chunks?page=0"])
		fs.nt("/chunk", "<http://x/a> <http://x/p> \"0\" .\n")
	}
	paged := func(fs *fixtureServer) {
		for i := range 5 {
			fs.feed(fmt.Sprintf("/fragments?page=%d", i), feedDoc(fmt.Sprintf("/fragments?page=%d", i+1), frag("a")))
		}
		fs.handle("/fragments", fs.routes["/fragments?page=0"])
	}
	for _, tc := range []struct {
		name  string
		setup func(*fixtureServer)
		cfg   func(*Config)
		msg   string
	}{
		{"chunk pages", chunked, func(c *Config) { c.MaxPages = 3 }, "snapshot: chunked snapshot feed: sdshare client: too many feed pages: more than 3 pages"},
		{"fragments pages", paged, func(c *Config) { c.MaxPages = 3 }, "fragments feed: sdshare client: too many feed pages: more than 3 pages"},
		{"run bytes", paged, func(c *Config) { c.MaxRunFeedBytes = 3000 }, "bytes read before"},
		{"page bytes", func(fs *fixtureServer) {
			fs.feed("/fragments", feedDoc("", strings.Repeat(frag("a"), 20)))
		}, func(c *Config) { c.MaxFeedBytes = 1500 }, "is longer than 1500 bytes"},
		{"URL length", func(fs *fixtureServer) {
			fs.feed("/fragments", feedDoc("/fragments?q="+strings.Repeat("q", 300), frag("a")))
		}, func(c *Config) { c.MaxURLBytes = 200 }, "is longer than 200 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := collectionServer(t, "2020-06-01T00:00:00Z", "")
			fs.nt("/frag/a", "<http://x/a> <http://x/p> \"a\" .\n")
			fs.feed("/fragments", feedDoc("", frag("a")))
			tc.setup(fs)
			e := newEnv(t)
			cfg := e.config(fs.URL() + "/")
			tc.cfg(&cfg)
			rep, err := Sync(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			cr := rep.Collections[0]
			if !strings.Contains(cr.Err, tc.msg) {
				t.Errorf("collection error %q, want %q", cr.Err, tc.msg)
			}
		})
	}
}

// TestFailuresBounded: the report keeps what failed, and a feed decides
// how much fails and what its entries say: pages of entries that all fail
// (here: no sdshare:resource) with 16 KiB ids and links. Before, every
// failure kept its entry's id (in the error) and link whole, so the
// report grew with the pages followed up to MaxRunFeedBytes (the memory
// item 2 bounds for the page set). Now it keeps at most maxFailures of
// them, each string shortened, and counts the rest.
func TestFailuresBounded(t *testing.T) {
	const pages, perPage = 20, 60
	big := strings.Repeat("x", 16<<10)
	fs := collectionServer(t, "2020-06-01T00:00:00Z", "<http://x/a> <http://x/p> \"0\" .\n")
	for p := range pages {
		var entries []string
		for i := range perPage {
			entries = append(entries, entryDoc(fmt.Sprintf("%s-%d-%d", big, p, i), "2020-06-02T00:00:00Z", nil, relFragment, nt, "/frag?"+big))
		}
		next := ""
		if p+1 < pages {
			next = fmt.Sprintf("/fragments?page=%d", p+1)
		}
		fs.feed(fmt.Sprintf("/fragments?page=%d", p), feedDoc(next, entries...))
	}
	fs.handle("/fragments", fs.routes["/fragments?page=0"])
	e := newEnv(t)
	cfg := e.config(fs.URL() + "/")
	cfg.MaxFeedBytes = 16 << 20
	rep, err := Sync(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cr := rep.Collections[0]
	if cr.Pages != pages {
		t.Fatalf("%d pages read, want %d (error %q)", cr.Pages, pages, cr.Err)
	}
	kept := 0
	for _, f := range cr.Failures {
		kept += len(f.URL) + len(f.Err) + len(f.Resource)
	}
	if bound := maxFailures * 3 * (maxFailureText + 32); len(cr.Failures) > maxFailures || kept > bound {
		t.Errorf("%d failures kept, %d bytes of them; want at most %d, %d bytes", len(cr.Failures), kept, maxFailures, bound)
	}
	if cr.FailuresOmitted != pages*perPage-maxFailures {
		t.Errorf("%d failures omitted, want %d", cr.FailuresOmitted, pages*perPage-maxFailures)
	}
	if n := rep.Failed(); n != pages*perPage || rep.OK() {
		t.Errorf("Failed() = %d, OK %v; want %d failures counted", n, rep.OK(), pages*perPage)
	}
}
