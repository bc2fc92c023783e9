package discover

import (
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/linkheader"
)

var testBase, _ = url.Parse("http://h.test/dir/page.html")

func TestParseLinkHeader(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []HeaderLink
	}{
		{[]string{`<http://a.test/cl.xml>; rel="resourcesync"`},
			[]HeaderLink{{Href: "http://a.test/cl.xml", Rel: []string{"resourcesync"}}}},
		{[]string{`<cl.xml>;rel=resourcesync`, `</hub>; rel="hub"; title="x;y, z"`},
			[]HeaderLink{{Href: "http://h.test/dir/cl.xml", Rel: []string{"resourcesync"}},
				{Href: "http://h.test/hub", Rel: []string{"hub"}, Params: map[string]string{"title": "x;y, z"}}}},
		{[]string{`<a>; rel="self hub" ; REL=other; Type=application/xml, <b>`},
			[]HeaderLink{{Href: "http://h.test/dir/a", Rel: []string{"self", "hub"}, Params: map[string]string{"type": "application/xml"}},
				{Href: "http://h.test/dir/b"}}},
		{[]string{`junk, <c>; rel="up"; title="a \"q\""`},
			[]HeaderLink{{Href: "http://h.test/dir/c", Rel: []string{"up"}, Params: map[string]string{"title": `a "q"`}}}},
		{[]string{`<mailto:x@y>; rel=a, <javascript:1>; rel=b, <//other.test/p#frag>; rel=c`},
			[]HeaderLink{{Href: "http://other.test/p", Rel: []string{"c"}}}},
		{[]string{`<unterminated; rel=x`, ``, `;;;,,,`}, nil},
	} {
		got := ParseLinkHeader(testBase, tc.in)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %#v\nwant %#v", tc.in, got, tc.want)
		}
	}
}

func TestHTMLLinks(t *testing.T) {
	for _, tc := range []struct {
		page string
		want []string
	}{
		{`<link rel="resourcesync" href="/cl.xml">`, []string{"http://h.test/cl.xml"}},
		{`<html><head><link rel=resourcesync href=cl.xml><link rel="ResourceSync alternate" href='x.xml'/></head>`,
			[]string{"http://h.test/dir/cl.xml", "http://h.test/dir/x.xml"}},
		{`<link rel="stylesheet" href="s.css"><link href="a.xml"><link rel="resourcesync">`, nil},
		{`<!-- <link rel="resourcesync" href="c1"> --><script><link rel="resourcesync" href="c2"></script>` +
			`<style>/* <link rel="resourcesync" href="c3"> */</style><title><link rel=resourcesync href=c4></title>` +
			`<link rel="resourcesync" href="ok">`, []string{"http://h.test/dir/ok"}},
		{`<base href="http://other.test/root/"><link rel="resourcesync" href="cl.xml?a=1&amp;b=2">`,
			[]string{"http://other.test/root/cl.xml?a=1&b=2"}},
		{`<link rel="resourcesync" href="javascript:alert(1)"><link rel="resourcesync" href="ftp://x/">`, nil},
		{`<link rel="resourcesync" href="unterminated`, nil},
		{`<script>never closed <link rel="resourcesync" href="x">`, nil},
		{`<linkx rel="resourcesync" href="x"><a rel="resourcesync" href="y">`, nil},
	} {
		got := htmlLinks([]byte(tc.page), testBase, "resourcesync")
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %q\nwant %q", tc.page, got, tc.want)
		}
	}
	// Only the first MiB is read.
	page := strings.Repeat(" ", maxHTML) + `<link rel="resourcesync" href="late">`
	if got := htmlLinks([]byte(page), testBase, "resourcesync"); got != nil {
		t.Errorf("link beyond the first MiB found: %q", got)
	}
}

func TestRobotsSitemaps(t *testing.T) {
	txt := "User-agent: *\r\nDisallow: /\r\n# Sitemap: http://h.test/commented.xml\r\n" +
		"SITEMAP:http://h.test/a.xml\n  sitemap :  /b.xml # trailing comment\nSitemap: http://h.test/a.xml\n" +
		"Sitemap:\nSitemap: ftp://h.test/c.xml\nNoSitemap: http://h.test/d.xml\n"
	got := robotsSitemaps([]byte(txt), testBase)
	want := []string{"http://h.test/a.xml", "http://h.test/b.xml"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func checkAbsolute(t *testing.T, what string, urls []string) {
	for _, u := range urls {
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" || pu.Fragment != "" {
			t.Fatalf("%s: %q is not an absolute http(s) URL without fragment", what, u)
		}
	}
}

func FuzzParseLinkHeader(f *testing.F) {
	for _, s := range []string{
		`<http://a.test/cl.xml>; rel="resourcesync"`,
		`<cl.xml>;rel=resourcesync, </hub>; rel="hub"; title="x;y, z"`,
		`junk, <c>; rel="up"; title="a \"q\""`,
		`<a>; rel="self hub" ; REL=other, <b>`,
		`<unterminated; rel=x`, `;;;,,,<>`, `<"a,b">; rel="x`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ls := ParseLinkHeader(testBase, []string{s})
		if len(ls) > linkheader.MaxLinks {
			t.Fatalf("%d links", len(ls))
		}
		var hrefs []string
		for _, l := range ls {
			hrefs = append(hrefs, l.Href)
			for _, r := range l.Rel {
				if r == "" || strings.ContainsAny(r, " \t") {
					t.Fatalf("bad rel %q", r)
				}
			}
		}
		checkAbsolute(t, "link header", hrefs)
	})
}

func FuzzHTMLLinks(f *testing.F) {
	for _, s := range []string{
		`<link rel="resourcesync" href="/cl.xml">`,
		`<html><head><link rel=resourcesync href=cl.xml><link rel="ResourceSync alternate" href='x.xml'/></head>`,
		`<!-- <link rel="resourcesync" href="c1"> --><script><link rel="resourcesync" href="c2"></script>`,
		`<base href="http://other.test/root/"><link rel="resourcesync" href="cl.xml?a=1&amp;b=2">`,
		`<link rel="resourcesync" href="unterminated`, `<<<!--`, `<a =x = =>`, `<script`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkAbsolute(t, "html", htmlLinks([]byte(s), testBase, "resourcesync"))
	})
}

func FuzzRobotsSitemaps(f *testing.F) {
	for _, s := range []string{
		"User-agent: *\nSitemap: http://h.test/a.xml\n",
		"sitemap:/b.xml # c\r\nSitemap:\n",
		"Sitemap: ftp://x/\x00\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := robotsSitemaps([]byte(s), testBase)
		checkAbsolute(t, "robots", got)
		seen := map[string]bool{}
		for _, u := range got {
			if seen[u] {
				t.Fatalf("%q repeated", u)
			}
			seen[u] = true
		}
	})
}
