package web

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestWantsHTML(t *testing.T) {
	for _, c := range []struct {
		accept string
		html   bool
	}{
		{"", false},
		{"*/*", false},
		{"application/xml", false},
		{"text/xml", false},
		{"application/xml, text/xml;q=0.9, */*;q=0.1", false},
		{"text/html", true},
		{"application/xhtml+xml", true},
		// Chromium, Firefox, Safari
		{"text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7", true},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", true},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,image/webp,*/*;q=0.8", true},
		{"application/xml, text/html;q=0.5", false},
		{"text/html;q=0.9, application/xml", false},
		{"text/html;q=0", false},
		{"text/html;q=0.5, application/*;q=0.4", true},
		{"text/html, text/*", false}, // equal: XML stays the default
		{"garbage;;;", false},
		{"text/html;q=0.1, */*", false}, // the wildcard weighs more
		{"text/html, */*;q=0.1", true},
	} {
		if got := WantsHTML(c.accept); got != c.html {
			t.Errorf("WantsHTML(%q) = %v, want %v", c.accept, got, c.html)
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
