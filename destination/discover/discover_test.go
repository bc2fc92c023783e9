package discover

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/faultserver"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source"
)

// realSource runs a published Source with the given sets under a base URL
// with path prefix (""  or "x/"); it returns the base URL.
func realSource(t *testing.T, sets []string, prefix string) string {
	return realSourceWith(t, sets, prefix, nil)
}

// realSourceWith is realSource with the handler wrapped by wrap.
func realSourceWith(t *testing.T, sets []string, prefix string, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/" + prefix
	var cfg []source.SetConfig
	for _, name := range sets {
		dir := t.TempDir()
		for _, f := range []string{"a.txt", "sub/b.txt"} {
			p := filepath.Join(dir, f)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(name+f), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cfg = append(cfg, source.SetConfig{Name: name, Dir: dir})
	}
	src, err := source.Open(source.Config{BaseURL: base, Sets: cfg, StateDir: t.TempDir(), ChangeListPeriod: time.Hour, Archives: true,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := src.Handler(nil)
	if wrap != nil {
		h = wrap(h)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
	return base
}

func setNames(r *Result) []string {
	var n []string
	for _, s := range r.Sets {
		n = append(n, s.Name)
	}
	sort.Strings(n)
	return n
}

// TestDiscoverRealSource discovers a real Source from every form of
// SOURCE, with one and two sets, with and without a path prefix.
func TestDiscoverRealSource(t *testing.T) {
	for _, layout := range []struct {
		name   string
		sets   []string
		prefix string
	}{
		{"one", []string{"default"}, ""},
		{"one-prefix", []string{"docs"}, "x/y/"},
		{"two", []string{"alpha", "beta"}, ""},
		{"two-prefix", []string{"alpha", "beta"}, "x/"},
	} {
		t.Run(layout.name, func(t *testing.T) {
			t.Parallel() // the Sources' set-up (scan, publish, fsync) dominates
			base := realSource(t, layout.sets, layout.prefix)
			first := layout.sets[0]
			resource := base + "a.txt"
			if len(layout.sets) > 1 {
				resource = base + first + "/a.txt"
			}
			capList := base + ".resourcesync/" + first + "/capabilitylist.xml"
			all := layout.sets
			for _, tc := range []struct {
				form      string
				source    string
				sets      []string
				direct    string
				directCap rs.Capability
			}{
				{"base", base, all, "", ""},
				{"base-no-slash", strings.TrimSuffix(base, "/"), all, "", ""},
				{"well-known", base + WellKnownPath, all, "", ""},
				{"capability-list", capList, []string{first}, "", ""},
				{"resource-list", base + ".resourcesync/" + first + "/resourcelist.xml", []string{first}, base + ".resourcesync/" + first + "/resourcelist.xml", rs.CapResourceList},
				{"change-list-index", base + ".resourcesync/" + first + "/changelist.xml", []string{first}, base + ".resourcesync/" + first + "/changelist.xml", rs.CapChangeList},
				{"archive", base + ".resourcesync/" + first + "/resourcelist-archive.xml", []string{first}, base + ".resourcesync/" + first + "/resourcelist-archive.xml", rs.CapResourceListArchive},
				{"resource-link-header", resource, []string{first}, "", ""},
			} {
				if tc.form == "base-no-slash" && layout.prefix == "" {
					continue
				}
				// source/server does not serve resources when the base URL
				// has a path prefix (it matches the set prefix, which
				// includes the mount, against the path without it).
				if tc.form == "resource-link-header" && layout.prefix != "" {
					continue
				}
				t.Run(tc.form, func(t *testing.T) {
					r, err := Discover(context.Background(), getter(t), tc.source)
					if err != nil {
						t.Fatal(err)
					}
					if r.Source != tc.source || r.Base != base || r.SourceDescription != base+WellKnownPath {
						t.Errorf("Source %q Base %q SD %q; want base %q", r.Source, r.Base, r.SourceDescription, base)
					}
					if got := setNames(r); strings.Join(got, ",") != strings.Join(tc.sets, ",") {
						t.Fatalf("sets %v, want %v", got, tc.sets)
					}
					for _, s := range r.Sets {
						cl := base + ".resourcesync/" + s.Name + "/"
						if s.CapabilityList != cl+"capabilitylist.xml" || s.ResourceList == "" || !strings.HasPrefix(s.ResourceList, cl) ||
							s.ChangeList != cl+"changelist.xml" || s.ResourceListArchive != cl+"resourcelist-archive.xml" ||
							s.ChangeListArchive != cl+"changelist-archive.xml" {
							t.Errorf("set %+v", s)
						}
						if s.ResourceDump != "" || s.ChangeDump != "" {
							t.Errorf("dumps offered without Dumps: %+v", s)
						}
						if up := linkHref(s.Links, rs.RelUp); up != base+WellKnownPath {
							t.Errorf("set links %+v", s.Links)
						}
					}
					if s := r.Sets[0]; s.Direct != tc.direct || s.DirectCapability != tc.directCap {
						t.Errorf("Direct %q %q, want %q %q", s.Direct, s.DirectCapability, tc.direct, tc.directCap)
					}
				})
			}
		})
	}
}

func linkHref(ls []rs.Link, rel string) string {
	for _, l := range ls {
		if l.Rel == rel {
			return l.Href
		}
	}
	return ""
}

// TestDiscoverSites covers discovery mechanisms on hand-made servers.
func TestDiscoverSites(t *testing.T) {
	capList := func(up string, extra ...item) page {
		items := append([]item{
			{loc: "BASE/sets/one/resourcelist.xml", capability: "resourcelist"},
			{loc: "BASE/sets/one/changelist.xml", capability: "changelist"},
			{loc: "BASE/sets/one/changelist2.xml", capability: "changelist"}, // duplicate: first wins
			{loc: "BASE/sets/one/resourcedump.xml", capability: "resourcedump"},
			{loc: "BASE/sets/one/changedump.xml", capability: "changedump"},
			{loc: "BASE/sets/one/rda.xml", capability: "resourcedump-archive"},
			{loc: "BASE/sets/one/cda.xml", capability: "changedump-archive"},
			{loc: "BASE/topic", capability: "change-notification", links: `<rs:ln rel="hub" href="BASE/hub"/>`},
			{loc: "BASE/unknown", capability: "something-else"},
		}, extra...)
		return page{body: xmlDoc("urlset", "capabilitylist", up, items...)}
	}
	rl := func(up string) page {
		return page{body: xmlDoc("urlset", "resourcelist", up, item{loc: "BASE/r1"})}
	}
	type want struct {
		sd, base string
		sets     []Set // compared on Name, CapabilityList, ResourceList, Direct
	}
	oneSet := Set{Name: "one", CapabilityList: "BASE/sets/one/capabilitylist.xml", ResourceList: "BASE/sets/one/resourcelist.xml"}
	for _, tc := range []struct {
		name   string
		pages  map[string]page
		source string // path on the site
		want   want
	}{
		{
			name: "link-header-relative",
			pages: map[string]page{
				"/":                            {body: "<p>hi</p>", ctype: "text/html", header: map[string]string{"Link": `<sets/one/capabilitylist.xml>; rel="resourcesync"`}},
				"/sets/one/capabilitylist.xml": capList(""),
			},
			source: "/",
			want:   want{base: "BASE/", sets: []Set{oneSet}},
		},
		{
			name: "html-link-relative",
			pages: map[string]page{
				"/site/index.html": {ctype: "text/html; charset=utf-8", body: `<!DOCTYPE html><html><head>
<!-- <link rel="resourcesync" href="/commented.xml"> -->
<script>var s = '<link rel="resourcesync" href="/script.xml">';</script>
<LINK REL="stylesheet resourcesync" HREF="../sets/one/capabilitylist.xml?a=1&amp;b=2">
</head><body>x</body></html>`},
				"/sets/one/capabilitylist.xml": capList("BASE/.well-known/resourcesync"),
			},
			source: "/site/index.html",
			want: want{sd: "BASE/.well-known/resourcesync", base: "BASE/",
				sets: []Set{{Name: "one", CapabilityList: "BASE/sets/one/capabilitylist.xml?a=1&b=2", ResourceList: "BASE/sets/one/resourcelist.xml"}}},
		},
		{
			name: "html-base-href",
			pages: map[string]page{
				"/p":                           {ctype: "text/html", body: `<html><head><base href="/sets/"><link href='one/capabilitylist.xml' rel=resourcesync></head></html>`},
				"/sets/one/capabilitylist.xml": capList(""),
			},
			source: "/p",
			want:   want{base: "BASE/", sets: []Set{oneSet}},
		},
		{
			name: "well-known-in-directory",
			pages: map[string]page{
				"/app/.well-known/resourcesync": {body: xmlDoc("urlset", "description", "", item{loc: "BASE/sets/one/capabilitylist.xml", capability: "capabilitylist"})},
				"/sets/one/capabilitylist.xml":  capList(""),
			},
			source: "/app/page.html",
			want:   want{sd: "BASE/app/.well-known/resourcesync", base: "BASE/app/", sets: []Set{oneSet}},
		},
		{
			name: "well-known-at-root",
			pages: map[string]page{
				"/app/page.html":               {body: "<html></html>", ctype: "text/html"},
				"/.well-known/resourcesync":    {body: xmlDoc("urlset", "description", "", item{loc: "/sets/one/capabilitylist.xml"})},
				"/sets/one/capabilitylist.xml": capList(""),
			},
			source: "/app/page.html",
			want:   want{sd: "BASE/.well-known/resourcesync", base: "BASE/", sets: []Set{oneSet}},
		},
		{
			name: "redirect",
			pages: map[string]page{
				"/old/":                         {status: 302, header: map[string]string{"Location": "/new/"}},
				"/new/.well-known/resourcesync": {body: xmlDoc("urlset", "description", "", item{loc: "BASE/sets/one/capabilitylist.xml"})},
				"/sets/one/capabilitylist.xml":  capList(""),
			},
			source: "/old/",
			want:   want{sd: "BASE/new/.well-known/resourcesync", base: "BASE/new/", sets: []Set{oneSet}},
		},
		{
			name: "robots-sitemap",
			pages: map[string]page{
				"/robots.txt":                  {ctype: "text/plain", body: "User-agent: *\nDisallow: /private\n# Sitemap: BASE/comment.xml\nSitemap: BASE/plain.xml\nsitemap:/sets/one/resourcelist.xml\n"},
				"/plain.xml":                   {body: `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>BASE/x</loc></url></urlset>`},
				"/sets/one/resourcelist.xml":   rl("BASE/sets/one/capabilitylist.xml"),
				"/sets/one/capabilitylist.xml": capList("BASE/.well-known/resourcesync"),
			},
			source: "/",
			want:   want{sd: "BASE/.well-known/resourcesync", base: "BASE/", sets: []Set{oneSet}},
		},
		{
			name: "robots-list-without-up",
			pages: map[string]page{
				"/robots.txt":   {ctype: "text/plain", body: "Sitemap: BASE/lists/rl.xml\n"},
				"/lists/rl.xml": rl(""),
			},
			source: "/",
			want:   want{base: "BASE/", sets: []Set{{Name: "rl", Direct: "BASE/lists/rl.xml"}}},
		},
		{
			name: "direct-list-up-broken",
			pages: map[string]page{
				"/rl.xml": rl("BASE/missing.xml"),
			},
			source: "/rl.xml",
			want:   want{base: "BASE/", sets: []Set{{Name: "rl", Direct: "BASE/rl.xml"}}},
		},
		{
			name: "description-index-and-names",
			pages: map[string]page{
				"/.well-known/resourcesync": {body: xmlDoc("sitemapindex", "description", "", item{loc: "BASE/sd1.xml"}, item{loc: "BASE/sd2.xml"})},
				"/sd1.xml": {body: xmlDoc("urlset", "description", "",
					item{loc: "BASE/.resourcesync/one/capabilitylist.xml"},
					item{loc: "BASE/a/b%20c/capabilitylist.xml"})},
				"/sd2.xml": {body: xmlDoc("urlset", "description", "",
					item{loc: "BASE/.resourcesync/one/capabilitylist.xml"}, // repeated: one set
					item{loc: "BASE/one.xml"},
					item{loc: "BASE/notes.xml", capability: "resourcelist"})}, // not a capability list: skipped
				"/.resourcesync/one/capabilitylist.xml": capList(""),
				"/a/b c/capabilitylist.xml":             capList(""),
				"/one.xml":                              capList(""),
			},
			source: "/",
			want: want{sd: "BASE/.well-known/resourcesync", base: "BASE/", sets: []Set{
				{Name: "one", CapabilityList: "BASE/.resourcesync/one/capabilitylist.xml", ResourceList: "BASE/sets/one/resourcelist.xml"},
				{Name: "b_c", CapabilityList: "BASE/a/b%20c/capabilitylist.xml", ResourceList: "BASE/sets/one/resourcelist.xml"},
				{Name: "one-2", CapabilityList: "BASE/one.xml", ResourceList: "BASE/sets/one/resourcelist.xml"},
			}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(t, tc.pages)
			x := func(v string) string { return strings.ReplaceAll(v, "BASE", s.URL) }
			r, err := Discover(context.Background(), getter(t), s.URL+tc.source)
			if err != nil {
				t.Fatal(err)
			}
			if r.SourceDescription != x(tc.want.sd) || r.Base != x(tc.want.base) {
				t.Errorf("SD %q Base %q, want %q %q", r.SourceDescription, r.Base, x(tc.want.sd), x(tc.want.base))
			}
			if len(r.Sets) != len(tc.want.sets) {
				t.Fatalf("%d sets: %+v", len(r.Sets), r.Sets)
			}
			for i, w := range tc.want.sets {
				g := r.Sets[i]
				if g.Name != w.Name || g.CapabilityList != x(w.CapabilityList) || g.ResourceList != x(w.ResourceList) || g.Direct != x(w.Direct) {
					t.Errorf("set %d = %+v\nwant %+v", i, g, w)
				}
				if g.CapabilityList == "" {
					continue
				}
				if g.ChangeList != x("BASE/sets/one/changelist.xml") || g.ResourceDump == "" || g.ChangeDump == "" ||
					g.ResourceDumpArchive == "" || g.ChangeDumpArchive == "" ||
					g.ChangeNotification != x("BASE/topic") || g.ChangeNotificationHub != x("BASE/hub") {
					t.Errorf("set %d offers %+v", i, g)
				}
			}
		})
	}
}

// TestDiscoverNotFound: nothing anywhere gives ErrNotFound naming every
// URL tried; a soft-404 HTML page at the well-known URL does not count.
func TestDiscoverNotFound(t *testing.T) {
	s := newSite(t, map[string]page{
		"/app/.well-known/resourcesync": {body: "<html>not here</html>", ctype: "text/html"},
		"/robots.txt":                   {body: "User-agent: *\nSitemap: /missing.xml\n", ctype: "text/plain"},
	})
	_, err := Discover(context.Background(), getter(t), s.URL+"/app/x")
	var nf *NotFoundError
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &nf) {
		t.Fatalf("err = %v", err)
	}
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 404 {
		t.Errorf("err does not unwrap to a 404: %v", err)
	}
	for _, p := range []string{"/app/x", "/app/x/.well-known/resourcesync", "/app/.well-known/resourcesync", "/.well-known/resourcesync", "/missing.xml"} {
		if !strings.Contains(err.Error(), s.URL+p+":") {
			t.Errorf("error does not mention %s:\n%v", p, err)
		}
	}
	if !errors.Is(err, ErrNotResourceSync) {
		t.Errorf("the HTML page is not reported as not a ResourceSync document: %v", err)
	}
}

// TestDiscoverErrors: failures other than "not here" stop the discovery.
func TestDiscoverErrors(t *testing.T) {
	s := newSite(t, map[string]page{
		"/.well-known/resourcesync": {body: xmlDoc("urlset", "description", "", item{loc: "BASE/gone.xml"})},
	})
	_, err := Discover(context.Background(), getter(t), s.URL)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 404 || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "gone.xml") {
		t.Errorf("missing capability list: err = %v", err)
	}

	if _, err := Discover(context.Background(), getter(t), "ftp://x/"); err == nil {
		t.Error("ftp URL accepted")
	}

	// A refused connection is not "not found".
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	g := getter(t)
	g.Retries = -1
	_, err = Discover(context.Background(), g, "http://"+addr+"/")
	if err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("refused connection: err = %v", err)
	}
}

func TestWellKnownCandidates(t *testing.T) {
	for src, want := range map[string]string{
		"http://h/":                           "http://h/.well-known/resourcesync",
		"http://h":                            "http://h/.well-known/resourcesync",
		"http://h/p":                          "http://h/p/.well-known/resourcesync http://h/.well-known/resourcesync",
		"http://h/p/":                         "http://h/p/.well-known/resourcesync http://h/.well-known/resourcesync",
		"http://h/p/q/page.html":              "http://h/p/q/.well-known/resourcesync http://h/.well-known/resourcesync",
		"http://h/p/.well-known/resourcesync": "http://h/p/.well-known/resourcesync http://h/.well-known/resourcesync",
	} {
		u, _ := url.Parse(src)
		if got := strings.Join(wellKnownCandidates(u), " "); got != want {
			t.Errorf("%s: %s, want %s", src, got, want)
		}
	}
}

func TestSetName(t *testing.T) {
	for _, tc := range []struct{ cl, direct, want string }{
		{"http://h/.resourcesync/docs/capabilitylist.xml", "", "docs"},
		{"http://h/x/.resourcesync/a.b_c-d/capabilitylist.xml", "", "a.b_c-d"},
		{"http://h/sets/photos/capabilitylist.xml", "", "photos"},
		{"http://h/photos-caps.xml", "", "photos-caps"},
		{"http://h/capabilitylist.xml", "", "default"},
		{"http://h/", "", "default"},
		{"http://h/.hidden/capabilitylist.xml", "", "hidden"},
		{"http://h/%2e%2e/capabilitylist.xml", "", "default"},
		{"http://h/a/b%2Fc/capabilitylist.xml", "", "b_c"},
		{"http://h/a/%E2%9C%93/capabilitylist.xml", "", "a"},
		{"", "http://h/lists/resourcelist.xml.gz", "lists"},
		{"", "http://h/resourcelist.xml", "default"},
		{"http://h/" + strings.Repeat("n", 100) + "/capabilitylist.xml", "", strings.Repeat("n", 64)},
	} {
		if got := setName(tc.cl, tc.direct, ""); got != tc.want {
			t.Errorf("setName(%q, %q) = %q, want %q", tc.cl, tc.direct, got, tc.want)
		}
	}
}

// TestDiscoverThroughFaults discovers a real Source whose every document
// fails (500, 429, reset, truncated) twice before it is served.
func TestDiscoverThroughFaults(t *testing.T) {
	var fs *faultserver.Handler
	base := realSourceWith(t, []string{"alpha", "beta"}, "", func(h http.Handler) http.Handler {
		fs = faultserver.New(h, 1, 3)
		fs.Faults = []faultserver.Fault{faultserver.Status500, faultserver.Status429, faultserver.Reset, faultserver.Truncated}
		// Not for 404s: a fault there would only delay the next probe.
		fs.Match = func(r *http.Request) bool { return strings.Contains(r.URL.Path, "resourcesync") }
		return fs
	})
	r, err := Discover(context.Background(), getter(t), base)
	if err != nil {
		t.Fatal(err)
	}
	if got := setNames(r); strings.Join(got, ",") != "alpha,beta" || r.Base != base {
		t.Fatalf("sets %v base %s", got, r.Base)
	}
	if fs.Injected() < 6 {
		t.Errorf("only %d faults injected: %v", fs.Injected(), fs.Counts())
	}
}

// TestNoTempFilesLeft runs the error paths with spool files kept until
// Close (as on systems that cannot unlink an open file): none may remain.
func TestNoTempFilesLeft(t *testing.T) {
	unlinkEarly = false
	defer func() { unlinkEarly = true }()
	s := newSite(t, map[string]page{
		"/page":                     {body: "<html><link rel=resourcesync href=/cl.xml></html>", ctype: "text/html"},
		"/cl.xml":                   {body: xmlDoc("urlset", "capabilitylist", "", item{loc: "BASE/rl.xml", capability: "resourcelist"})},
		"/rl.xml":                   {body: xmlDoc("urlset", "resourcelist", "BASE/cl.xml", item{loc: "BASE/r"})},
		"/broken.xml":               {body: xmlDoc("urlset", "resourcelist", "BASE/page", item{loc: "BASE/r"})[:150]},
		"/.well-known/resourcesync": {body: xmlDoc("urlset", "description", "", item{loc: "BASE/cl.xml"}, item{loc: "BASE/rl.xml"})},
	})
	g := getter(t) // checks its TempDir is empty at the end
	for _, p := range []string{"/page", "/cl.xml", "/rl.xml", "/broken.xml", "/", "/missing"} {
		Discover(context.Background(), g, s.URL+p)
	}
	g.MaxBytes = 10
	Discover(context.Background(), g, s.URL+"/rl.xml")
	g.MaxBytes = 0
	d, err := g.Open(context.Background(), s.URL+"/rl.xml")
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(g.TempDir); len(ents) != 1 {
		t.Errorf("%d spool files while a Doc is open, want 1", len(ents))
	}
	d.Close()
}

// TestDiscoverTolerantCandidates: a robots.txt Sitemap on a host that
// refuses connections does not hide the one that works.
func TestDiscoverTolerantCandidates(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String() + "/rl.xml"
	ln.Close()
	s := newSite(t, map[string]page{
		"/robots.txt":   {ctype: "text/plain", body: "Sitemap: " + dead + "\nSitemap: BASE/set/rl.xml\n"},
		"/set/rl.xml":   {body: xmlDoc("urlset", "resourcelist", "BASE/set/caps.xml", item{loc: "BASE/r"})},
		"/set/caps.xml": {body: xmlDoc("urlset", "capabilitylist", "", item{loc: "BASE/set/rl.xml", capability: "resourcelist"})},
	})
	r, err := Discover(context.Background(), getter(t), s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Sets) != 1 || r.Sets[0].Name != "caps" || r.Sets[0].ResourceList != s.URL+"/set/rl.xml" || r.Sets[0].Direct != "" {
		t.Errorf("sets %+v", r.Sets)
	}
}

// TestDiscoverNamedDocumentMissing: a document SOURCE names explicitly that
// answers with an error status fails the discovery with ErrNamedDocument;
// the host's Source Description, which would describe something else, is
// not even fetched. A base URL still falls back to it.
func TestDiscoverNamedDocumentMissing(t *testing.T) {
	s := newSite(t, map[string]page{
		"/.well-known/resourcesync":      {body: xmlDoc("urlset", "description", "", item{loc: "BASE/cl.xml"})},
		"/cl.xml":                        {body: xmlDoc("urlset", "capabilitylist", "", item{loc: "BASE/rl.xml", capability: "resourcelist"})},
		"/gone/.well-known/resourcesync": {status: 500, body: "oops"},
	})
	g := getter(t)
	g.Retries = -1
	for _, src := range []string{"/sets/a/resourcelist.xml", "/changelist.xml.gz", "/Caps.XML", "/gone/.well-known/resourcesync"} {
		_, err := Discover(context.Background(), g, s.URL+src)
		var se *StatusError
		if !errors.Is(err, ErrNamedDocument) || !errors.As(err, &se) || errors.Is(err, ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNamedDocument with the status", src, err)
			continue
		}
		if !strings.Contains(err.Error(), s.URL+src) || !strings.Contains(err.Error(), "no other place is searched") {
			t.Errorf("%s: message does not say what failed and why nothing else was tried: %v", src, err)
		}
	}
	if n := s.hitCount("/.well-known/resourcesync"); n != 0 {
		t.Errorf("the host's Source Description was fetched %d times for a named document", n)
	}
	for _, src := range []string{"/app/", "/app"} {
		r, err := Discover(context.Background(), g, s.URL+src)
		if err != nil || len(r.Sets) != 1 || r.SourceDescription != s.URL+"/.well-known/resourcesync" {
			t.Errorf("base URL %s: %+v, %v; want the host's Source Description", src, r, err)
		}
	}
}
