package aggstatus

import (
	"html/template"
	"io"
	"net/url"
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
<div class="card">Running<b id="n-running" data-value="{{.Running}}">{{.Running}}</b></div>
<div class="card">Workers busy<b id="n-busy" data-value="{{.Busy}}">{{.Busy}} / {{.Workers}}</b></div>
</div>
<h2 id="sources">Sources</h2>
{{if not .Sources}}<p class="muted">No Source.</p>{{else}}<p class="muted">Sorted by {{.SortText}}.</p>
<div class="scroll"><table id="sources-table">
<thead><tr>{{range .Columns}}{{if .Key}}{{template "sorthead" .}}{{else}}<th scope="col"{{if .Num}} class="num"{{end}}>{{.Label}}</th>{{end}}{{end}}</tr></thead>
<tbody>{{range .Sources}}<tr data-source="{{.ID}}">
<td class="id"><b>{{if $links}}<a href="source/{{pathesc .ID}}/">{{.ID}}</a>{{else}}{{.ID}}{{end}}</b>{{if .Dest}}<br><code class="muted">{{.Dest}}</code>{{end}}</td>
<td class="url">{{.URL}}</td>
<td>{{.Kind}}</td>
<td class="state"><span class="tag {{state .State .Failures}}">{{.State}}</span></td>
<td class="success">{{if .LastSuccess.IsZero}}<span class="muted">never</span>{{else}}<time datetime="{{rfc .LastSuccess}}">{{time .LastSuccess}}</time><br><span class="muted">{{dur ($now.Sub .LastSuccess)}} ago</span>{{end}}</td>
<td class="lag num" data-value="{{if .LagKnown}}{{secs .Lag}}{{end}}">{{if .LagKnown}}{{if eq .Lag 0}}<span class="good">caught up</span>{{else}}{{dur .Lag}}{{end}}{{else}}<span class="muted">unknown</span>{{end}}</td>
<td class="next">{{if .Next.IsZero}}<span class="muted">—</span>{{else}}<time datetime="{{rfc .Next}}">{{time .Next}}</time>{{if .Next.After $now}}<br><span class="muted">in {{dur (.Next.Sub $now)}}</span>{{end}}{{end}}</td>
<td class="failures num" data-value="{{.Failures}}">{{if .Failures}}<span class="bad">{{.Failures}}</span>{{else}}0{{end}}</td>
<td class="error url">{{if .Reason}}<span class="tag bad">{{.Reason}}</span> {{end}}{{.LastError}}</td>
<td class="runs num">{{.Succeeded}} / {{.Runs}}</td>
<td class="counts num">{{num .Fetched}} / {{num .Deleted}} / {{if .Failed}}<span class="bad">{{num .Failed}}</span>{{else}}0{{end}}<br><span class="muted" title="{{.Bytes}} bytes">{{bytes .Bytes}}</span></td>
<td class="node">{{if .Node}}<code>{{.Node}}</code>{{else}}<span class="muted">—</span>{{end}}</td>
<td class="follow">{{if .Notifications}}<span class="good">notifications</span>{{else if .Follow}}<span class="warn">polling</span> <span class="muted">(no subscription)</span>{{else}}polling{{end}}</td>
</tr>
{{end}}</tbody></table></div>{{end}}
{{end}}{{end}}`

var view = web.New("aggregator", content, template.FuncMap{
	"dur":     web.Duration,
	"rfc":     func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"pathesc": url.PathEscape,
	"secs":    func(d time.Duration) int64 { return int64(d / time.Second) },
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
	col := func(key, label string, num bool) column {
		c := column{Key: key, Label: label, Num: num, Current: key != "" && key == by}
		if key != "" && live {
			c.Href = "?sort=" + key
		}
		c.Dir = "descending"
		if key == SortName || key == SortSuccess {
			c.Dir = "ascending"
		}
		return c
	}
	p.Columns = []column{
		col(SortName, "Source", false), col("", "URL", false), col("", "Kind", false), col("", "State", false),
		col(SortSuccess, "Last success", false), col(SortLag, "Lag", true), col("", "Next run", false),
		col(SortErrors, "Failures", true), col("", "Reason, last error", false), col("", "Succeeded / runs", true),
		col("", "Fetched / deleted / failed, bytes", true), col("", "Node", false), col("", "Changes by", false),
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
