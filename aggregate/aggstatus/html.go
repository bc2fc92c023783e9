package aggstatus

import (
	"html/template"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate"
	"github.com/resourcesync-go/resourcesync/destination/status"
	"github.com/resourcesync-go/resourcesync/internal/web"
)

// RefreshSeconds is how often the live page reloads itself (a meta
// refresh: no script), as a mirror's page does.
const RefreshSeconds = status.RefreshSeconds

// The columns' headers are links that sort (?sort=) in the live page,
// plain text in a report (a file cannot sort itself).
const content = `{{define "sorthead"}}<th scope="col"{{if .Num}} class="num"{{end}}{{if .Current}} aria-sort="{{.Dir}}"{{end}}>{{if .Href}}<a class="sort" id="sort-{{.Key}}" href="{{.Href}}">{{.Label}}</a>{{else}}{{.Label}}{{end}}{{if .Current}} <span aria-hidden="true">▾</span>{{end}}</th>{{end}}
{{define "content"}}{{with .Data}}{{$now := .Now}}{{$links := .Links}}
<h1>Aggregator</h1>
<p class="muted">{{if .Node}}node <code>{{.Node}}</code> · {{end}}store <span class="url" id="store">{{.Store}}</span> · started {{time .Started}}, up {{dur (.Now.Sub .Started)}}{{if .Live}} · refreshed every {{.Refresh}} s{{else}} · report written {{time .Now}}{{end}}</p>
{{if .SourcesError}}<p class="bad" id="sources-error">The sources file could not be read (the previous Sources are kept): <span class="url">{{.SourcesError}}</span></p>{{end}}
<div class="cards" id="summary">
<div class="card">Sources<b id="n-sources" data-value="{{len .Sources}}">{{len .Sources}}</b></div>
<div class="card">OK<b id="n-ok" data-value="{{.OK}}"{{if .OK}} class="good"{{end}}>{{.OK}}</b></div>
<div class="card">Failing<b id="n-failing" data-value="{{.Failing}}"{{if .Failing}} class="bad"{{end}}>{{.Failing}}</b></div>
<div class="card">Running<b id="n-running" data-value="{{.Running}}">{{.Running}}</b>{{if gt .Running .Busy}}<span class="muted" id="n-running-note">{{.Busy}} in worker slots, {{sub .Running .Busy}} set off by notifications</span>{{end}}</div>
<div class="card">Workers busy<b id="n-busy" data-value="{{.Busy}}">{{.Busy}} / {{.Workers}}</b></div>
</div>
<h2 id="sources">Sources</h2>
{{if not .Sources}}<p class="muted">No Source.</p>{{else}}<p class="muted">Sorted by {{.SortText}}.{{if .Live}} Sort by{{range $i, $c := .Columns}}{{if .Href}}{{if $i}} ·{{end}} <a href="{{.Href}}">{{.Label}}</a>{{end}}{{end}}.{{end}}</p>
<div class="scroll"><table id="sources-table" class="fit">
<colgroup>{{range .Columns}}<col class="c-{{.Class}}">{{end}}</colgroup>
<thead><tr>{{range .Columns}}{{if .Key}}{{template "sorthead" .}}{{else}}<th scope="col"{{if .Num}} class="num"{{end}}>{{.Label}}</th>{{end}}{{end}}</tr></thead>
<tbody>{{range .Sources}}<tr data-source="{{.ID}}">
<td class="id" data-label="Source"><b>{{if $links}}<a href="source/{{pathesc .ID}}/">{{.ID}}</a>{{else}}{{.ID}}{{end}}</b><span class="line url muted" title="{{.URL}}">{{.URL}}</span>{{if .Dest}}<code class="line muted" title="{{.Dest}}">{{.Dest}}</code>{{end}}</td>
<td class="state" data-label="State"><span class="tag {{state .State .Failures}}">{{.State}}</span><span class="line muted">{{.Kind}}, {{if .Notifications}}<span class="good">notifications</span>{{else if .Follow}}<span class="warn" title="--follow, but no subscription">polling</span>{{else}}polling{{end}}</span>{{if .Node}}<code class="line muted" title="node {{.Node}}">{{.Node}}</code>{{end}}</td>
<td class="success" data-label="Last success">{{if .LastSuccess.IsZero}}<span class="muted">never</span>{{else}}<time datetime="{{rfc .LastSuccess}}" title="{{time .LastSuccess}}">{{dur ($now.Sub .LastSuccess)}} ago</time>{{end}}</td>
<td class="lag num" data-label="Lag" data-value="{{if .LagKnown}}{{secs .Lag}}{{end}}">{{if .LagKnown}}{{if eq .Lag 0}}<span class="good">caught up</span>{{else}}{{dur .Lag}}{{end}}{{else}}<span class="muted">unknown</span>{{end}}</td>
<td class="next" data-label="Next run">{{if .Next.IsZero}}<span class="muted">—</span>{{else if .Next.After $now}}<time datetime="{{rfc .Next}}" title="{{time .Next}}">in {{dur (.Next.Sub $now)}}</time>{{else}}<time datetime="{{rfc .Next}}" title="{{time .Next}}">now</time>{{end}}</td>
<td class="failures num" data-label="Failures" data-value="{{.Failures}}">{{if .Failures}}<span class="bad">{{.Failures}}</span>{{else}}0{{end}}</td>
<td class="error" data-label="Reason, last error">{{if or .Reason .LastError}}<details><summary>{{if .Reason}}<span class="tag bad">{{.Reason}}</span> {{end}}{{firstline .LastError}}</summary><div class="chain url">{{.LastError}}</div></details>{{end}}</td>
<td class="runs num" data-label="Succeeded / runs">{{.Succeeded}}<span class="line muted">of {{.Runs}}</span></td>
<td class="counts num" data-label="Fetched / deleted / failed">{{num .Fetched}}<span class="line muted">{{num .Deleted}} deleted</span>{{if .Failed}}<span class="line bad">{{num .Failed}} failed</span>{{end}}<span class="line muted" title="{{.Bytes}} bytes">{{bytes .Bytes}}</span></td>
</tr>
{{end}}</tbody></table></div>{{end}}
{{end}}{{end}}`

var view = web.New("aggregator", content, template.FuncMap{
	"dur":     web.Duration,
	"rfc":     func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"pathesc": url.PathEscape,
	"secs":    func(d time.Duration) int64 { return int64(d / time.Second) },
	"sub":     func(a, b int) int { return a - b },
	// firstline is an error's summary: its first line (a chain of causes
	// is often one per line), whole; the cell cuts it to its width.
	"firstline": func(s string) string {
		line, _, _ := strings.Cut(s, "\n")
		return line
	},
	"state": func(state string, failures int) string {
		switch {
		case failures > 0 || state == aggregate.StateBackoff:
			return "bad"
		case state == aggregate.StateRunning || state == aggregate.StateFollowing:
			return "good"
		}
		return ""
	},
})

type column struct {
	Key, Label, Href, Dir string
	Class                 string // of its <col>: its width (web.Style, table.fit)
	Num, Current          bool
}

// page is what the template reads.
type page struct {
	aggregate.Snapshot
	Live                 bool
	Refresh              int
	Links                bool // to each Source's page
	SortText             string
	Columns              []column
	OK, Failing, Running int
}

var sortText = map[string]string{
	SortErrors:  "errors (consecutive failures, then reason, then lag)",
	SortLag:     "lag, the furthest behind first",
	SortSuccess: "last success, the oldest first",
	SortName:    "name",
}

// writeHTML writes s (sanitized and sorted by by) as the live page or a
// report.
func writeHTML(w io.Writer, s aggregate.Snapshot, by string, live, links bool) error {
	if by == "" {
		by = SortErrors
	}
	p := page{Snapshot: s, Live: live, Refresh: RefreshSeconds, Links: links, SortText: sortText[by]}
	for _, x := range s.Sources {
		switch {
		case x.Failures > 0:
			p.Failing++
		case !x.LastSuccess.IsZero():
			p.OK++
		}
		if x.State == aggregate.StateRunning {
			p.Running++
		}
	}
	col := func(key, class, label string, num bool) column {
		c := column{Key: key, Class: class, Label: label, Num: num, Current: key != "" && key == by}
		if key != "" && live {
			c.Href = "?sort=" + key
		}
		c.Dir = "descending"
		if key == SortName || key == SortSuccess {
			c.Dir = "ascending"
		}
		return c
	}
	// Nine columns of set widths (a fixed layout: the table fits the page
	// at 1280 px; below 60rem each row becomes a card, see web.Style): a
	// long URL or error is cut to its cell, whole on hover or on click.
	p.Columns = []column{
		col(SortName, "wide", "Source", false), col("", "mid", "State", false),
		col(SortSuccess, "time", "Last success", false), col(SortLag, "narrow", "Lag", true), col("", "time", "Next run", false),
		col(SortErrors, "narrow", "Failures", true), col("", "wide", "Reason, last error", false),
		col("", "mid", "Succeeded / runs", true), col("", "mid", "Fetched, deleted, failed", true),
	}
	wp := web.Page{Title: "Aggregator status", Data: p}
	if live {
		wp.Refresh = RefreshSeconds
		q := ""
		if by != SortErrors {
			q = "?sort=" + by
		}
		wp.Footer = []web.Link{{Href: "status.json" + q, Text: "JSON"}, {Href: "metrics", Text: "Metrics"}}
	}
	return web.Render(w, view, wp)
}
