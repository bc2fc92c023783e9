package web

import (
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/units"
)

// Link is a hyperlink of a page's breadcrumb trail or footer.
type Link struct {
	Href, Text string
}

// Page is what the layout needs around a view's content.
type Page struct {
	Title string
	// Crumbs lead from the top down to the page (the page itself is not
	// one: its Title ends the trail).
	Crumbs []Link
	// Refresh, when positive, reloads the page every so many seconds
	// (a meta refresh: the status pages stay current without script).
	Refresh int
	// Footer links (e.g. the XML of a document, the metrics).
	Footer []Link
	// Data is the view's own: its content template reads .Data.
	Data any
}

var layout = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="` + MetaCSP + `">
<meta name="viewport" content="width=device-width, initial-scale=1">
{{if gt .Refresh 0}}<meta http-equiv="refresh" content="{{.Refresh}}">
{{end}}<meta name="referrer" content="same-origin">
<title>{{.Title}}</title>
<style>` + Style + `</style>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header><nav aria-label="Breadcrumb"><ol>{{range .Crumbs}}<li><a href="{{.Href}}">{{.Text}}</a></li>{{end}}<li aria-current="page">{{.Title}}</li></ol></nav></header>
<main id="main" tabindex="-1">
{{template "content" .}}
</main>
<footer>{{range $i, $l := .Footer}}{{if $i}} · {{end}}<a href="{{$l.Href}}">{{$l.Text}}</a>{{end}}{{if .Footer}} · {{end}}resourcesync-go</footer>
</body>
</html>
`

// Funcs are the template functions every view gets.
var Funcs = template.FuncMap{
	"bytes": HumanBytes,
	"num":   Num,
	"time":  FormatTime,
	"ago":   Ago,
	"short": Short,
	"pct":   func(a, b float64) string { return Percent(a, b) },
}

// New parses a view: content must define "content" (it may define other
// templates too); extra functions are added to Funcs. It panics on a
// template error, as template.Must does: views are fixed at build time.
func New(name, content string, extra template.FuncMap) *template.Template {
	t := template.New(name).Funcs(Funcs)
	if extra != nil {
		t = t.Funcs(extra)
	}
	template.Must(t.Parse(layout))
	template.Must(t.Parse(content))
	return t
}

// Render executes a view made by New. Write the headers (SetHeaders)
// first.
func Render(w io.Writer, t *template.Template, p Page) error {
	return t.Execute(w, p)
}

// HumanBytes formats a size in bytes with binary units ("1.5 MiB"), the
// tool's one convention (internal/units); the exact figure is in a title
// where the views need it.
func HumanBytes(n int64) string { return units.Bytes(n) }

// Num formats an integer with thin separators between thousands
// ("1,234,567").
func Num(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// FormatTime formats a time in UTC to the second ("2026-11-25 17:41:25Z");
// the zero time is "—".
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// Ago says how long before now t was, coarsely ("3 s", "5 min", "2 h",
// "4 d"); the zero time is "never".
func Ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return Duration(time.Since(t))
}

// Duration formats a duration coarsely, as Ago does.
func Duration(d time.Duration) string {
	switch {
	case d < 0:
		return "0 s"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < 2*time.Minute:
		return strconv.FormatInt(int64(d/time.Second), 10) + " s"
	case d < 2*time.Hour:
		return strconv.FormatInt(int64(d/time.Minute), 10) + " min"
	case d < 48*time.Hour:
		return strconv.FormatInt(int64(d/time.Hour), 10) + " h"
	}
	return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + " d"
}

// Short shortens a hash or identifier for display ("3f2a9c…").
func Short(s string) string {
	if len(s) <= 12 {
		return s
	}
	return s[:12] + "…"
}

// Percent formats a/b as a percentage ("42%"); "—" when b is 0.
func Percent(a, b float64) string {
	if b == 0 || math.IsNaN(a/b) {
		return "—"
	}
	return strconv.FormatFloat(100*a/b, 'f', 0, 64) + "%"
}
