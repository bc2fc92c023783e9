package hub

import (
	"context"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/web"
)

// The admin pages. Callback URLs, topics and error messages come from
// subscribers: html/template escapes them, and none is made a link.

const adminNav = `{{define "adminnav"}}<nav class="pager" aria-label="Hub admin"><a href="./">Overview</a><a href="subscriptions">Subscriptions</a><a href="dead-letters">Dead letters</a>{{if .CSRF}}<form class="inline" method="post" action="logout"><input type="hidden" name="csrf" value="{{.CSRF}}"><button type="submit">Log out</button></form>{{end}}</nav>
{{with .Flash}}<p role="status" class="{{if .OK}}good{{else}}bad{{end}}">{{.Msg}}</p>{{end}}{{end}}
{{define "pager"}}{{if gt .Pages 1}}<nav class="pager" aria-label="Pages">{{if .Prev}}<a href="{{.Prev}}" rel="prev">Previous</a>{{end}}<span aria-current="page">Page {{.Page}} of {{.Pages}}</span>{{if .Next}}<a href="{{.Next}}" rel="next">Next</a>{{end}}</nav>{{end}}{{end}}`

// adminFuncs: count formats any integer as web.Num does.
var adminFuncs = template.FuncMap{"count": func(v any) string {
	switch n := v.(type) {
	case int:
		return web.Num(int64(n))
	case int64:
		return web.Num(n)
	case uint64:
		if n > math.MaxInt64 {
			return strconv.FormatUint(n, 10)
		}
		return web.Num(int64(n))
	}
	return fmt.Sprint(v)
}}

var (
	loginTpl = web.New("hub-login", `{{define "content"}}<h1>Hub admin</h1>
{{with .Data.Error}}<p role="alert" class="bad">{{.}}</p>{{end}}
<form method="post" action="login">
<p><label for="token">Admin token</label><br><input id="token" name="token" type="password" autocomplete="current-password" required autofocus></p>
<p><button type="submit">Log in</button></p>
</form>
<p class="muted">The token is the hub's <code>--admin-token</code>. Logging in sets a session cookie for these pages only.</p>{{end}}`, adminFuncs)

	overviewTpl = web.New("hub-overview", adminNav+`{{define "content"}}{{with .Data}}{{template "adminnav" .}}<h1>Hub admin</h1>
<div class="cards">
<div class="card"><b>{{count .Subscriptions}}</b>subscriptions</div>
<div class="card"><b>{{count .Pending}}</b>pending verifications</div>
<div class="card"><b{{if .DeadLetters}} class="bad"{{end}}>{{count .DeadLetters}}</b>dead letters</div>
<div class="card"><b>{{count .Nodes}}</b>hub nodes</div>
</div>
<dl class="facts">
<dt>This node</dt><dd><code>{{.Node}}</code></dd>
<dt>Delivered by this node</dt><dd>{{count .Held}} subscriptions</dd>
{{if .HubURL}}<dt>Hub URL</dt><dd class="url">{{.HubURL}}</dd>{{end}}
{{if .Metrics}}<dt>Metrics</dt><dd><a href="{{.Metrics}}">Prometheus metrics</a></dd>{{end}}
</dl>
<p><a href="subscriptions">Subscriptions, backlog and errors</a> · <a href="dead-letters">Dead letters</a></p>{{end}}{{end}}`, adminFuncs)

	subsTpl = web.New("hub-subscriptions", adminNav+`{{define "content"}}{{with .Data}}{{template "adminnav" .}}<h1>Subscriptions</h1>
<p>{{count .Total}} subscriptions{{if .Topic}} to <code>{{.Topic}}</code>{{end}}. Backlog = topic head − cursor: notifications the subscriber has still to receive.</p>
{{template "pager" .}}
{{if .Subs}}<div class="scroll"><table>
<thead><tr><th scope="col">Callback</th><th scope="col" class="num">Backlog</th><th scope="col" class="num">Cursor</th><th scope="col" class="num">Head</th><th scope="col" class="num">Failures</th><th scope="col">Last error</th><th scope="col">Last attempt</th><th scope="col">Next attempt</th><th scope="col">Failing since</th><th scope="col">Lease expires</th><th scope="col">Topic</th></tr></thead>
<tbody>{{range .Subs}}<tr>
<td class="url">{{.Callback}}</td><td class="num{{if .Backlog}} warn{{end}}">{{count .Backlog}}</td><td class="num">{{count .Cursor}}</td><td class="num">{{count .Head}}</td>
<td class="num{{if .Failures}} bad{{end}}">{{.Failures}}</td><td class="bad">{{.LastError}}</td>
<td>{{if .LastAttempt.IsZero}}<span class="muted">{{if .Held}}none yet{{else}}other node{{end}}</span>{{else}}{{time .LastAttempt}}{{end}}</td>
<td>{{time .NextAttempt}}</td><td>{{time .FailingSince}}</td><td>{{time .Expires}}</td><td class="url">{{.Topic}}</td>
</tr>{{end}}</tbody></table></div>{{else}}<p class="muted">No subscriptions{{if gt .Page 1}} on this page{{end}}.</p>{{end}}
{{template "pager" .}}{{end}}{{end}}`, adminFuncs)

	deadTpl = web.New("hub-deadletters", adminNav+`{{define "content"}}{{with .Data}}{{template "adminnav" .}}<h1>Dead letters</h1>
<p>{{count .Total}} notifications that could not be delivered before the hub gave up. Replay delivers one once more to its subscription; it disappears when delivered.</p>
{{template "pager" .}}
{{if .Letters}}<div class="scroll"><table>
<thead><tr><th scope="col" class="num">ID</th><th scope="col">Callback</th><th scope="col">Last error</th>{{if .CSRF}}<th scope="col">Replay</th>{{end}}<th scope="col" class="num">Attempts</th><th scope="col" class="num">Seq</th><th scope="col">Published</th><th scope="col">Given up</th><th scope="col">Topic</th></tr></thead>
<tbody>{{range .Letters}}<tr>
<td class="num">{{.ID}}</td><td class="url">{{.Callback}}</td><td class="bad">{{.LastError}}</td>
{{if $.Data.CSRF}}<td><form class="inline" method="post" action="replay"><input type="hidden" name="csrf" value="{{$.Data.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><input type="hidden" name="page" value="{{$.Data.Page}}"><button type="submit" aria-label="Replay dead letter {{.ID}}">Replay</button></form></td>{{end}}
<td class="num">{{.Attempts}}</td><td class="num">{{.Seq}}</td><td>{{time .Published}}</td><td>{{time .At}}</td><td class="url">{{.Topic}}</td>
</tr>{{end}}</tbody></table></div>{{else}}<p class="muted">No dead letters.</p>{{end}}
{{template "pager" .}}{{end}}{{end}}`, adminFuncs)
)

// adminData is what the admin pages read.
type adminData struct {
	CSRF  string // empty: no session (bearer), no forms
	Flash *flash
	Error string

	Subscriptions, Pending, DeadLetters, Nodes, Held int
	Node, HubURL, Metrics                            string

	Topic              string
	Subs               []SubscriptionState
	Letters            []DeadLetter
	Total, Page, Pages int
	Prev, Next         string
}

func (a *admin) data(u who) adminData {
	d := adminData{}
	if u.s != nil {
		a.mu.Lock()
		d.CSRF, d.Flash, u.s.flash = u.s.csrf, u.s.flash, nil
		a.mu.Unlock()
	}
	return d
}

func (a *admin) loginPage(w http.ResponseWriter, code int, msg string) {
	web.SetHeaders(w.Header())
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	a.render(w, loginTpl, web.Page{Title: "Hub admin: log in", Data: adminData{Error: msg}})
}

func (a *admin) overview(w http.ResponseWriter, r *http.Request, u who) {
	d := a.data(u)
	st := a.h.Stats()
	d.Subscriptions, d.Pending, d.DeadLetters, d.Held, d.Node = st.Subscriptions, st.PendingVerifications, st.DeadLetters, st.Held, st.Node
	d.Nodes, d.HubURL, d.Metrics = a.h.Nodes(), a.h.cfg.URL, a.o.MetricsURL
	web.SetHeaders(w.Header())
	a.render(w, overviewTpl, web.Page{Title: "Hub admin", Refresh: 30, Data: d})
}

// page reads ?page=N (1-based).
func pageOf(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// paginate sets Page, Pages, Prev and Next of d for total rows.
func (a *admin) paginate(d *adminData, base string, q url.Values, page, total int) {
	d.Total, d.Page = total, page
	d.Pages = max(1, (total+a.o.PageSize-1)/a.o.PageSize)
	link := func(n int) string {
		v := url.Values{}
		for k, vs := range q {
			v[k] = vs
		}
		if n > 1 {
			v.Set("page", strconv.Itoa(n))
		}
		if len(v) == 0 {
			return base
		}
		return base + "?" + v.Encode()
	}
	if page > 1 {
		d.Prev = link(min(page-1, d.Pages))
	}
	if page < d.Pages {
		d.Next = link(page + 1)
	}
}

var adminCrumbs = []web.Link{{Href: "./", Text: "Hub admin"}}

func (a *admin) subscriptions(w http.ResponseWriter, r *http.Request, u who) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	topic, page := r.URL.Query().Get("topic"), pageOf(r)
	total, err := a.h.CountSubscriptions(ctx, topic)
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	subs, _, err := a.h.SubscriptionStates(ctx, topic, (page-1)*a.o.PageSize, a.o.PageSize)
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	web.Vary(w.Header())
	if !web.WantsHTML(r) {
		writeJSON(w, map[string]any{"total": total, "page": page, "page_size": a.o.PageSize, "subscriptions": subs})
		return
	}
	d := a.data(u)
	d.Topic, d.Subs = topic, subs
	q := url.Values{}
	if topic != "" {
		q.Set("topic", topic)
	}
	a.paginate(&d, "subscriptions", q, page, total)
	web.SetHeaders(w.Header())
	a.render(w, subsTpl, web.Page{Title: "Subscriptions", Crumbs: adminCrumbs, Data: d})
}

func (a *admin) deadLetters(w http.ResponseWriter, r *http.Request, u who) {
	web.Vary(w.Header())
	if !web.WantsHTML(r) {
		// The tools' list, as it always was: all of them.
		dl, err := a.h.DeadLetters(r.Context())
		if err != nil {
			httpError(w, http.StatusInternalServerError, err.Error())
			return
		}
		if r.URL.Query().Get("body") != "1" {
			for i := range dl {
				dl[i].Body = nil
			}
		}
		writeJSON(w, dl)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	page := pageOf(r)
	letters, _, err := a.h.DeadLetterPage(ctx, (page-1)*a.o.PageSize, a.o.PageSize)
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	d := a.data(u)
	d.Letters = letters
	a.paginate(&d, "dead-letters", nil, page, a.h.Stats().DeadLetters)
	web.SetHeaders(w.Header())
	a.render(w, deadTpl, web.Page{Title: "Dead letters", Crumbs: adminCrumbs, Data: d})
}

func (a *admin) render(w http.ResponseWriter, t *template.Template, p web.Page) {
	if err := web.Render(w, t, p); err != nil {
		a.h.log.Error("admin page", "page", t.Name(), "err", err)
	}
}
