package web

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/webtest"
)

// TestWantsHTML: the default headers of every client a server meets
// (webtest.Clients): only a browser's navigation gets the page; Java's
// Accept, which names text/html first, does not.
func TestWantsHTML(t *testing.T) {
	for _, c := range webtest.Clients {
		for _, path := range []string{"/.well-known/resourcesync", "/c/fragments?since=2000-01-01T00:00:00Z&page=2"} {
			r := httptest.NewRequest("GET", path, nil)
			c.Set(r)
			if got := WantsHTML(r); got != c.HTML {
				t.Errorf("%s, %s: WantsHTML = %v, want %v", c.Name, path, got, c.HTML)
			}
		}
	}
	nav := func(kv ...string) http.Header {
		h := http.Header{"Sec-Fetch-Dest": {"document"}, "Sec-Fetch-Mode": {"navigate"}, "Accept": {webtest.AcceptFirefox}}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				h.Del(kv[i])
			} else {
				h.Set(kv[i], kv[i+1])
			}
		}
		return h
	}
	for _, c := range []struct {
		name, query string
		h           http.Header
		html        bool
	}{
		{"navigation", "", nav(), true},
		{"?format=html, no header", "format=html", http.Header{}, true},
		{"?format=HTML from Java", "format=HTML", http.Header{"Accept": {webtest.AcceptJava8}}, true},
		{"?format=html from fetch()", "page=2&format=html", http.Header{"Accept": {"*/*"}, "Sec-Fetch-Mode": {"cors"}, "Sec-Fetch-Dest": {"empty"}}, true},
		{"?format=xml in the address bar", "format=xml", nav(), false},
		{"?format=atom in the address bar", "format=atom", nav(), false},
		{"?format= empty", "format=", nav(), false},
		{"Sec-Fetch-Mode navigate only", "", nav("Sec-Fetch-Dest", ""), true},
		{"Sec-Fetch-Dest document only", "", nav("Sec-Fetch-Mode", ""), true},
		{"an iframe's navigation", "", nav("Sec-Fetch-Dest", "iframe"), true},
		{"an image", "", nav("Sec-Fetch-Dest", "image", "Sec-Fetch-Mode", "no-cors", "Accept", "image/avif,image/webp,*/*;q=0.8"), false},
		{"a navigation refusing HTML", "", nav("Accept", "text/html;q=0, application/xml"), false},
		{"a navigation naming no HTML", "", nav("Accept", "application/xml"), false},
		{"a navigation with xhtml only", "", nav("Accept", "application/xhtml+xml"), true},
		{"no Accept, navigation", "", nav("Accept", ""), false},
		{"Upgrade-Insecure-Requests with HTML", "", http.Header{"Upgrade-Insecure-Requests": {"1"}, "Accept": {"text/html"}}, true},
		{"Upgrade-Insecure-Requests with Java's Accept", "", http.Header{"Upgrade-Insecure-Requests": {"1"}, "Accept": {webtest.AcceptJava17}}, true},
		{"Upgrade-Insecure-Requests without HTML", "", http.Header{"Upgrade-Insecure-Requests": {"1"}, "Accept": {"*/*"}}, false},
		{"Upgrade-Insecure-Requests 0", "", http.Header{"Upgrade-Insecure-Requests": {"0"}, "Accept": {"text/html"}}, false},
		{"Upgrade-Insecure-Requests beside a cors fetch", "", http.Header{"Upgrade-Insecure-Requests": {"1"}, "Accept": {"text/html"}, "Sec-Fetch-Mode": {"cors"}}, false},
		{"text/html alone", "", http.Header{"Accept": {"text/html"}}, false},
		{"a browser's Accept alone", "", http.Header{"Accept": {webtest.AcceptChromium}}, false},
		{"garbage", "", nav("Accept", "garbage;;;"), false},
	} {
		r := httptest.NewRequest("GET", "/x?"+c.query, nil)
		r.Header = c.h
		if got := WantsHTML(r); got != c.html {
			t.Errorf("%s: WantsHTML = %v, want %v", c.name, got, c.html)
		}
	}
	r := httptest.NewRequest("GET", "/x", nil)
	r.Header = nav("Accept", "application/xml")
	r.Header.Add("Accept", "text/html;q=0.5")
	if !WantsHTML(r) {
		t.Error("an Accept split over two lines: the second's text/html not seen")
	}
}

// TestVary: Vary names every header WantsHTML reads, once, beside what
// the response varies on already.
func TestVary(t *testing.T) {
	for _, c := range []struct {
		before []string
		want   []string
	}{
		{nil, []string{VaryHTML}},
		{[]string{"Accept"}, []string{"Accept", "Sec-Fetch-Dest, Sec-Fetch-Mode, Upgrade-Insecure-Requests"}},
		{[]string{"Origin", "accept, sec-fetch-dest"}, []string{"Origin", "accept, sec-fetch-dest", "Sec-Fetch-Mode, Upgrade-Insecure-Requests"}},
		{[]string{VaryHTML}, []string{VaryHTML}},
		{[]string{"*"}, []string{"*"}},
	} {
		h := http.Header{"Vary": c.before}
		Vary(h)
		Vary(h)
		if got := h.Values("Vary"); !slices.Equal(got, c.want) {
			t.Errorf("Vary after %q: %q, want %q", c.before, got, c.want)
		}
	}
}

// The CSP's hash is that of the stylesheet as the layout inlines it: a
// browser would otherwise refuse the style.
func TestStyleHashMatchesPage(t *testing.T) {
	tpl := New("x", `{{define "content"}}<p>{{.Data}}</p>{{end}}`, nil)
	var sb strings.Builder
	if err := Render(&sb, tpl, Page{Title: "T", Data: "<b>"}); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(sb.String())
	if m == nil {
		t.Fatal("no style element")
	}
	sum := sha256.Sum256([]byte(m[1]))
	if want := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(CSP, want) {
		t.Fatalf("CSP %q lacks %s", CSP, want)
	}
	if !strings.Contains(sb.String(), "<p>&lt;b&gt;</p>") {
		t.Fatalf("data not escaped:\n%s", sb.String())
	}
	rec := httptest.NewRecorder()
	SetHeaders(rec.Header())
	Vary(rec.Header())
	Vary(rec.Header())
	if got := rec.Header().Values("Vary"); len(got) != 1 {
		t.Fatalf("Vary = %q", got)
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{HumanBytes(0), "0 B"}, {HumanBytes(1023), "1023 B"}, {HumanBytes(1536), "1.5 KiB"},
		{HumanBytes(50 << 20), "50 MiB"}, {Num(0), "0"}, {Num(1234567), "1,234,567"}, {Num(-1000), "-1,000"},
		{Num(100), "100"}, {Duration(1500 * time.Millisecond), "1 s"}, {Duration(3 * time.Hour), "3 h"},
		{FormatTime(time.Time{}), "—"}, {Percent(1, 4), "25%"}, {Percent(1, 0), "—"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestChart(t *testing.T) {
	c := Chart{Title: "changes per hour", Unit: "changes", Bars: []Bar{{Label: "10h", Value: 3}, {Label: "11h", Value: 0}, {Label: "<12h>", Value: 7}}}
	s := string(c.SVG())
	if n := strings.Count(s, "<rect "); n != 3 {
		t.Fatalf("%d bars", n)
	}
	for _, want := range []string{"10 changes in total", "most: 7 at &lt;12h&gt;", `role="img"`, ">10<"} {
		if !strings.Contains(s, want) {
			t.Errorf("chart lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "<12h>") {
		t.Error("label not escaped")
	}
	if s := string((Chart{Title: "empty"}).SVG()); !strings.Contains(s, "0 in total") {
		t.Errorf("empty chart: %s", s)
	}
}
