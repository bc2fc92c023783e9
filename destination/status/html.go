package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/web"
)

// RefreshSeconds is how often the live page reloads itself (a meta
// refresh: no script).
const RefreshSeconds = 5

const content = `{{define "content"}}{{with .Data}}{{$now := .Now}}
<h1>Mirror of <span class="url">{{.Source}}</span></h1>
<p class="muted">{{if .Command}}<code>{{.Command}}</code> · {{end}}{{if .Dest}}into <code>{{.Dest}}</code> · {{end}}{{if .Base}}base <span class="url">{{.Base}}</span> · {{end}}{{if .Callback}}callback <span class="url" id="callback">{{.Callback}}</span> · {{end}}started {{time .Started}}, up <span id="uptime">{{dur .Uptime}}</span>{{if .Live}} · refreshed every {{.Refresh}} s{{else}} · report written {{time .Now}}{{end}}</p>
{{if .Phase}}<p id="phase">Now: {{.Phase}}</p>{{end}}
<h2 id="since-start">Since start</h2>
<div class="cards" id="totals">
<div class="card">Files fetched<b id="t-fetched">{{num .Totals.Fetched}}</b></div>
<div class="card">Bytes fetched<b id="t-bytes" title="{{.Totals.Bytes}} bytes">{{bytes .Totals.Bytes}}</b></div>
<div class="card">Deleted<b id="t-deleted">{{num .Totals.Deleted}}</b></div>
<div class="card">Failed<b id="t-failed"{{if .Totals.Failed}} class="bad"{{end}}>{{num .Totals.Failed}}</b></div>
<div class="card">Retries<b id="t-retries">{{num .Totals.Retries}}</b></div>
<div class="card">Already in sync<b id="t-skipped">{{num .Totals.Skipped}}</b></div>
</div>
<h2 id="sets">Sets</h2>
{{if not .Sets}}<p class="muted">No set has finished a run yet.</p>{{end}}
{{range .Sets}}<section class="set" data-set="{{.Name}}" aria-labelledby="set-{{.Name}}">
<h3 id="set-{{.Name}}">Set {{.Name}}</h3>
<dl class="facts">
<dt>Checkpoint</dt><dd class="checkpoint">{{with .Checkpoint}}{{if .Until.IsZero}}none yet{{else}}changes applied up to <time datetime="{{rfc .Until}}">{{time .Until}}</time>{{end}}{{if .Baseline}} (baseline of {{time .At}}){{else}} <span class="warn">(no complete baseline yet)</span>{{end}}{{else}}<span class="muted">not known yet</span>{{end}}</dd>
<dt>Source published up to</dt><dd class="source-until">{{if .SourceUntil.IsZero}}<span class="muted">not known yet</span>{{else}}<time datetime="{{rfc .SourceUntil}}">{{time .SourceUntil}}</time>{{end}}</dd>
<dt>Lag behind the Source</dt><dd class="lag">{{if .LagKnown}}{{if and (eq .Lag 0) (eq .Failed 0)}}<span class="good">caught up</span>{{else if eq .Lag 0}}<span class="warn">behind</span>{{else}}<span class="warn">{{dur .Lag}} behind</span>{{end}}{{else}}<span class="muted">unknown</span>{{end}}{{if .Failed}}: {{.Failed}} failed in the last run hold the checkpoint back until they are applied{{end}}{{if .Checkpoint}}{{if not .Checkpoint.Until.IsZero}}; checkpoint {{dur .Age}} old{{end}}{{end}}</dd>
<dt>Newest change applied</dt><dd class="newest">{{if .Newest.IsZero}}<span class="muted">none since start</span>{{else}}{{time .Newest}}{{end}}</dd>
<dt>Last run</dt><dd class="last-run">{{if .LastRun.IsZero}}<span class="muted">none</span>{{else}}{{time .LastRun}}: {{.Summary}}{{end}}</dd>
{{if .Audit}}<dt>Audit</dt><dd class="audit">{{range $k, $v := .Audit}}<span class="tag">{{$k}} {{$v}}</span> {{end}}</dd>{{end}}
{{if .Follow}}<dt>Changes arrive</dt><dd class="follow">{{if eq .Follow "notifications"}}<span class="good">by notification</span> (WebSub{{if .Hub}}, hub <span class="url">{{.Hub}}</span>{{end}}){{else if eq .Follow "stopped"}}<span class="muted">no longer: following stopped</span>{{else}}<span class="warn">by polling</span> the Change Lists{{if .Why}} ({{.Why}}){{end}}{{end}}</dd>
<dt>Subscription lease</dt><dd class="lease">{{if .Expires.IsZero}}<span class="muted">none</span>{{else}}expires <time datetime="{{rfc .Expires}}">{{time .Expires}}</time> (in {{dur (.Expires.Sub $now)}}){{end}}</dd>{{end}}
</dl>
</section>
{{end}}
<h2 id="throughput">Throughput, last hour</h2>
<figure id="chart-files">{{.FilesChart}}<figcaption>Files changed (fetched or deleted) per minute; {{num .HourFiles}} in the last hour.</figcaption></figure>
<figure id="chart-bytes">{{.BytesChart}}<figcaption>Bytes fetched per minute; {{bytes .HourBytes}} in the last hour.</figcaption></figure>
<h2 id="changes">Last changes applied</h2>
{{if .Changes}}<p class="muted">The newest {{len .Changes}} (at most {{.MaxChanges}}), newest first.</p>
<div class="scroll"><table id="changes-table">
<thead><tr><th scope="col">Time</th><th scope="col">Set</th><th scope="col">Change</th><th scope="col">Path</th><th scope="col" class="num">Bytes</th><th scope="col">At the Source</th></tr></thead>
<tbody>{{range .Changes}}<tr><td>{{time .Time}}</td><td>{{.Set}}</td><td><span class="tag {{.Type}}">{{.Type}}</span></td><td class="url"><a href="{{.URI}}">{{.Path}}</a></td><td class="num">{{if eq .Type "deleted"}}—{{else}}{{bytes .Bytes}}{{end}}</td><td>{{time .DateTime}}</td></tr>
{{end}}</tbody></table></div>{{else}}<p class="muted">None since start.</p>{{end}}
<h2 id="failures">Failures</h2>
{{if .Failures}}<p class="muted">The newest {{len .Failures}} (at most {{.MaxFailures}}), newest first; a resource given up on is tried again by the next run (with --follow, the next catch-up).</p>
<div class="scroll"><table id="failures-table">
<thead><tr><th scope="col">Time</th><th scope="col">Set</th><th scope="col">URL</th><th scope="col">Error</th><th scope="col">Outcome</th></tr></thead>
<tbody>{{range .Failures}}<tr><td>{{time .Time}}</td><td>{{.Set}}</td><td class="url">{{.URI}}</td><td class="url error">{{.Error}}</td><td><span class="{{if eq .Outcome "given up"}}bad{{else}}warn{{end}}">{{.Outcome}}</span></td></tr>
{{end}}</tbody></table></div>{{else}}<p class="good">None since start.</p>{{end}}
{{end}}{{end}}`

var view = web.New("mirror", content, template.FuncMap{
	"dur": web.Duration,
	"rfc": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
})

// page is what the template reads.
type page struct {
	Snapshot
	Live                 bool
	Refresh              int
	FilesChart           template.HTML
	BytesChart           template.HTML
	HourFiles, HourBytes int64
}

func newPage(s Snapshot, live bool) page {
	p := page{Snapshot: s, Live: live, Refresh: RefreshSeconds}
	files := web.Chart{Title: "Files changed per minute, last hour", Unit: "files"}
	byts := web.Chart{Title: "Bytes fetched per minute, last hour", Unit: "bytes"}
	for _, m := range s.Throughput {
		label := m.Start.UTC().Format("15:04")
		files.Bars = append(files.Bars, web.Bar{Label: label, Value: float64(m.Files)})
		byts.Bars = append(byts.Bars, web.Bar{Label: label, Value: float64(m.Bytes),
			Title: fmt.Sprintf("%s: %s", label, web.HumanBytes(m.Bytes))})
		p.HourFiles += m.Files
		p.HourBytes += m.Bytes
	}
	p.FilesChart, p.BytesChart = files.SVG(), byts.SVG()
	return p
}

// WriteHTML writes the snapshot as a page: live (it reloads itself every
// RefreshSeconds) or a report.
func WriteHTML(w io.Writer, s Snapshot, live bool) error {
	wp := web.Page{Title: "Mirror status", Data: newPage(s, live)}
	if live {
		wp.Refresh = RefreshSeconds
		wp.Footer = []web.Link{{Href: "status.json", Text: "JSON"}}
	}
	return web.Render(w, view, wp)
}

// Handler serves the live page at / and the same figures as JSON at
// /status.json. It answers GET and HEAD only; it shows, never changes.
func (r *Recorder) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		switch req.URL.Path {
		case "/", "/index.html":
			var b bytes.Buffer
			if err := WriteHTML(&b, r.Snapshot(), true); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			web.SetHeaders(w.Header())
			w.Write(b.Bytes())
		case "/status.json":
			b, err := json.MarshalIndent(r.Snapshot(), "", "  ")
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Write(append(b, '\n'))
		default:
			http.NotFound(w, req)
		}
	})
}

// WriteReport writes the current snapshot as a self-contained HTML page
// (no refresh, nothing to load: the stylesheet is inline, the charts are
// inline SVG) to path, atomically: a temporary file beside it, synced,
// then renamed over it, so a reader never sees half a report.
func (r *Recorder) WriteReport(path string) error {
	var b bytes.Buffer
	if err := WriteHTML(&b, r.Snapshot(), false); err != nil {
		return err
	}
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// 0666 less the umask, as any file the user writes (CreateTemp's
	// 0600 would make a report for a web server unreadable to it).
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.tmp-%d", name, rand.Int64()))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	_, err = f.Write(b.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
