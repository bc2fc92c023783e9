package status

import (
	"fmt"
	"html/template"
	"net/http"

	"github.com/resourcesync-go/resourcesync/internal/web"
)

type view struct {
	Now               string
	Sets              []setView
	Hub               *hubFigures
	SourceDescription string
	Metrics           string
	Refresh           int
	Sections          []Section
}

type setView struct {
	*setFigures
	ProblemText string
	Bytes       bytesView
	HourlyChart template.HTML
	DailyChart  template.HTML
}

const content = `{{define "content"}}{{with .Data}}
<h1>Source status</h1>
<p class="muted">Figures of {{.Now}}{{if gt .Refresh 0}}; this page reloads every {{.Refresh}} s{{end}}.
<a href="{{.SourceDescription}}">Source Description</a>{{if .Metrics}} · <a href="{{.Metrics}}">Metrics</a>{{end}}</p>
<nav aria-label="Sets"><p>Sets: {{range $i, $s := .Sets}}{{if $i}}, {{end}}<a href="#set-{{$s.Name}}">{{$s.Name}}</a>{{end}}</p></nav>
{{range .Sets}}
<section id="set-{{.Name}}" aria-labelledby="set-{{.Name}}-h">
<h2 id="set-{{.Name}}-h">Set {{.Name}}</h2>
<p><a class="caplist" href="{{.CapabilityList}}">Capability List</a>{{if .Feeds}} · feeds: <a class="feed" href="{{.Feeds}}collection.json">IIIF Change Discovery</a>, <a class="feed" href="{{.Feeds}}ldes.ttl">LDES</a>{{end}}{{if .Topic}} · channel <code>{{.Topic}}</code>{{end}}</p>
{{if .ProblemText}}<p class="bad" data-figure="problem">{{.ProblemText}}</p>{{end}}
{{if .Err}}<p class="bad">{{.Err}}; the figures below may be missing.</p>{{end}}
<div class="cards">
<div class="card">Resources<b data-figure="resources" data-value="{{.Stats.Resources}}">{{num (i64 .Stats.Resources)}}</b></div>
<div class="card">Total size{{if .Bytes.Known}}<b data-figure="bytes" data-value="{{.Bytes.Sum}}" title="{{num .Bytes.Sum}} bytes">{{bytes .Bytes.Sum}}</b>{{if not .Bytes.Current}}<span class="muted">counted {{time .Bytes.At}}{{if .Bytes.Running}}; counting again{{end}}</span>{{end}}{{else}}<b data-figure="bytes">—</b><span class="muted">{{if .Bytes.Running}}counting…{{else}}not counted yet{{end}}</span>{{end}}</div>
<div class="card">Changes, last 24 h<b data-figure="last24h" data-value="{{.Last24h}}">{{num .Last24h}}</b></div>
<div class="card">Changes, last 30 days<b data-figure="last30d" data-value="{{.Last30d}}">{{num .Last30d}}</b></div>
<div class="card">Journal records<b data-figure="records" data-value="{{.Records}}">{{num .Records}}</b>{{if .Stats.LastSeq}}<span class="muted">seq {{.Stats.FirstSeq}}–{{.Stats.LastSeq}}</span>{{end}}</div>
<div class="card">Last change<b>{{if .Stats.LastSeq}}{{ago .Stats.LastTime}}{{else}}—{{end}}</b><span class="muted">{{time .Stats.LastTime}}</span></div>
</div>
<figure class="hourly">{{.HourlyChart}}<figcaption>Changes per hour over the last 24 hours (UTC; the last bar is the current hour).</figcaption></figure>
<figure class="daily">{{.DailyChart}}<figcaption>Changes per day over the last 30 days (UTC; the last bar is today).</figcaption></figure>
<h3>Newest journal records</h3>
{{if .Newest}}<div class="scroll"><table class="newest">
<thead><tr><th class="num">Seq</th><th>Time</th><th>Change</th><th>Path</th><th class="num">Size</th></tr></thead>
<tbody>{{range .Newest}}<tr data-seq="{{.Seq}}"><td class="num">{{.Seq}}</td><td>{{time .Time}}</td><td><span class="tag {{.Kind}}">{{.Kind}}</span></td><td class="url"><a href="{{.URL}}">{{.Path}}</a></td><td class="num" data-value="{{.Size}}" title="{{num .Size}} bytes">{{bytes .Size}}</td></tr>
{{end}}</tbody></table></div>{{else}}<p class="muted">The journal is empty: no change since the first scan.</p>{{end}}
<h3>Published documents</h3>
{{if .Docs}}<div class="scroll"><table class="docs">
<thead><tr><th>Kind</th><th class="num">Files</th><th class="num">Total</th><th>Newest</th></tr></thead>
<tbody>{{range .Docs}}<tr><td>{{if .Index}}<a href="{{.Index.URL}}">{{.Kind}}</a> <span class="muted">({{bytes .Index.Size}})</span>{{else}}{{.Kind}}{{end}}</td><td class="num">{{num (i64 .Count)}}</td><td class="num" title="{{num .Bytes}} bytes">{{bytes .Bytes}}</td>
<td class="url">{{range $i, $f := .Files}}{{if $i}}<br>{{end}}<a href="{{$f.URL}}">{{$f.Name}}</a> <span class="muted">{{bytes $f.Size}}</span>{{end}}{{if gt .Count (len .Files)}}<br><span class="muted">and {{num (i64 (sub .Count (len .Files)))}} older{{if .Index}}, listed in the <a href="{{.Index.URL}}">{{.Index.Name}}</a>{{end}}</span>{{end}}</td></tr>
{{end}}</tbody></table></div>{{else}}<p class="muted">No document published yet.</p>{{end}}
</section>
{{end}}
{{range .Sections}}
<section id="{{.ID}}" aria-labelledby="{{.ID}}-h">
<h2 id="{{.ID}}-h">{{.Title}}</h2>
{{if .Problem}}<p class="bad" data-figure="problem">{{.Problem}}</p>{{end}}
<dl class="facts">{{range .Facts}}<dt>{{.Name}}</dt><dd{{if .Figure}} data-figure="{{.Figure}}"{{end}}>{{.Value}}</dd>
{{end}}</dl>
</section>
{{end}}
{{with .Hub}}
<section id="notifications" aria-labelledby="notifications-h">
<h2 id="notifications-h">Change notifications</h2>
<dl class="facts"><dt>Hub</dt><dd><code>{{.URL}}</code>{{if not .Embedded}} (external: its subscribers are not shown here){{end}}</dd>
</dl>
{{if .Err}}<p class="bad">{{.Err}}; the figures below may be missing.</p>{{end}}
{{if .Embedded}}
<div class="cards">
<div class="card">Subscriptions<b data-figure="subscriptions" data-value="{{.Subs}}">{{num (i64 .Subs)}}</b></div>
<div class="card">Pending verifications<b>{{num (i64 .Pending)}}</b></div>
<div class="card">Backlog<b data-figure="backlog" data-value="{{.Backlog}}"{{if .Backlog}} class="warn"{{end}}>{{if .Partial}}≥ {{end}}{{num (u64 .Backlog)}}</b><span class="muted">notifications published, not yet delivered</span></div>
<div class="card">Dead letters<b data-figure="dead" data-value="{{.DeadCount}}"{{if .DeadCount}} class="bad"{{end}}>{{num (i64 .DeadCount)}}</b></div>
</div>
<p class="muted">Subscribers are shown by the host of their callback only: a callback URL can be private to its subscriber.</p>
<div class="scroll"><table class="subscribers">
<thead><tr><th>Set</th><th>Callback host</th><th class="num">Subscriptions</th><th class="num">Backlog (max)</th><th class="num">Failing</th><th>Earliest expiry</th></tr></thead>
<tbody>{{range .Topics}}{{$set := .Set}}{{range .Hosts}}<tr><td>{{$set}}</td><td><code>{{.Host}}</code></td><td class="num">{{.Count}}</td><td class="num">{{.Backlog}}{{if gt .Count 1}} ({{.MaxBacklog}}){{end}}</td><td class="num{{if .Failing}} bad{{end}}"{{if .LastError}} title="{{.LastError}}"{{end}}>{{.Failing}}</td><td>{{time .Expires}}</td></tr>
{{else}}<tr><td>{{$set}}</td><td colspan="5" class="muted">no subscriber</td></tr>
{{end}}{{if .More}}<tr><td>{{$set}}</td><td colspan="5" class="muted">{{num (i64 .Subscribers)}} subscriptions in all; the rows above group the first ones read</td></tr>
{{end}}{{end}}</tbody></table></div>
<h3>Dead letters</h3>
{{if .Dead}}<div class="scroll"><table class="dead">
<thead><tr><th>Time</th><th>Set</th><th>Callback host</th><th class="num">Seq</th><th class="num">Attempts</th><th>Last error</th></tr></thead>
<tbody>{{range .Dead}}<tr><td>{{time .At}}</td><td>{{.Set}}</td><td><code>{{.Host}}</code></td><td class="num">{{.Seq}}</td><td class="num">{{.Attempts}}</td><td class="bad">{{.Error}}</td></tr>
{{end}}</tbody></table></div>{{if gt .DeadCount (len .Dead)}}<p class="muted">The newest {{len .Dead}} of {{num (i64 .DeadCount)}}; the hub's admin lists and replays them all.</p>{{end}}{{else if .DeadCount}}<p class="muted">{{num (i64 .DeadCount)}} dead letters; the hub's admin lists and replays them.</p>{{else}}<p class="muted">None.</p>{{end}}
{{end}}
</section>
{{end}}
{{end}}{{end}}`

var tpl = web.New("status", content, template.FuncMap{
	"sub": func(a, b int) int { return a - b },
	"i64": func(a int) int64 { return int64(a) },
	"u64": func(a uint64) int64 { return int64(a) },
})

func (h *Handler) render(w http.ResponseWriter, r *http.Request, snap *snapshot) {
	v := view{
		Now:               web.FormatTime(snap.Now),
		Hub:               snap.Hub,
		SourceDescription: h.cfg.BaseURL + ".well-known/resourcesync",
		Metrics:           h.cfg.Metrics,
	}
	if h.cfg.Refresh > 0 {
		v.Refresh = int(h.cfg.Refresh.Seconds())
	}
	if h.cfg.Sections != nil {
		v.Sections = h.cfg.Sections()
	}
	for _, f := range snap.Sets {
		sv := setView{setFigures: f, Bytes: h.bytesOf(f.Name, f.Stats)}
		if f.Problem != nil {
			sv.ProblemText = f.Problem() // now, not as cached with the figures
		}
		sv.HourlyChart = chart(fmt.Sprintf("Changes per hour in set %s, last 24 hours", f.Name), f.Hourly, "15:04", "2006-01-02 15:04 UTC")
		sv.DailyChart = chart(fmt.Sprintf("Changes per day in set %s, last 30 days", f.Name), f.Daily, "01-02", "2006-01-02 (UTC)")
		v.Sets = append(v.Sets, sv)
	}
	page := web.Page{Title: "Source status", Refresh: v.Refresh, Data: v,
		Crumbs: []web.Link{{Href: v.SourceDescription, Text: "Source Description"}}}
	page.Footer = append(page.Footer, web.Link{Href: v.SourceDescription, Text: "Source Description"})
	if h.cfg.Metrics != "" {
		page.Footer = append(page.Footer, web.Link{Href: h.cfg.Metrics, Text: "Metrics"})
	}
	web.SetHeaders(w.Header())
	w.Header().Set("Cache-Control", "no-store")
	if r.Method == http.MethodHead {
		return
	}
	if err := web.Render(w, tpl, page); err != nil {
		h.cfg.Logger.Debug("status page: rendering", "err", err) // a client gone
	}
}

func chart(title string, bs []bucket, label, long string) template.HTML {
	c := web.Chart{Title: title, Unit: "changes"}
	for _, b := range bs {
		c.Bars = append(c.Bars, web.Bar{Label: b.Start.Format(label), Value: float64(b.Count),
			Title: fmt.Sprintf("%s: %d changes", b.Start.Format(long), b.Count)})
	}
	return c.SVG()
}
