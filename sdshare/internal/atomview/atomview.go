package atomview

import (
	"html/template"
	"io"
	"net/url"
	"strings"

	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/sdshare"
	"github.com/resourcesync-go/resourcesync/sdshare/atom"
)

// Options adjust a page.
type Options struct {
	// Title replaces the feed's title as the page's heading (e.g. to say
	// which page of a paged feed this is); "" keeps the feed's.
	Title string
	// Crumbs lead from the top down to the page.
	Crumbs []web.Link
	// Footer links (e.g. health, metrics).
	Footer []web.Link
	// Base, when set, is an absolute URL (ending with '/'); links that
	// start with it are written as paths from the root of its host.
	Base string
}

// LinkGroup is one target of an entry's or a feed's links: every link to
// the same href and type, with their rels.
type LinkGroup struct {
	Href string   // as written in the page (see Options.Base)
	Full string   // as in the feed
	Type string   // media type, "" when not given
	Rels []string // short names: the SDShare namespace is dropped
	Live bool     // an http(s) or relative URL: written as a link
}

// pagerRels are the paging relations (RFC 5005, RFC 5988) shown as a pager,
// in the order shown.
var pagerRels = []struct{ rel, text string }{
	{"first", "First page"},
	{"prev-archive", "Previous archive"},
	{"previous", "Previous page"},
	{"prev", "Previous page"},
	{"current", "Current"},
	{"next", "Next page"},
	{"next-archive", "Next archive"},
	{"last", "Last page"},
}

type pagerLink struct{ Href, Text, Rel string }

type data struct {
	renderer
	Feed    *atom.Feed
	Links   []LinkGroup
	Pager   []pagerLink
	Count   int64
	Changes bool // some entry has a summary
	Res     bool // some entry has an sdshare:resource
	Next    bool
}

const content = `{{define "content"}}{{with .Data}}
<h1>{{$.Title}}</h1>
<dl class="facts">
<dt>Feed id</dt><dd><code>{{.Feed.ID}}</code></dd>
<dt>Updated</dt><dd>{{time .Feed.Updated}}</dd>
{{if .Feed.Author}}<dt>Author</dt><dd>{{.Feed.Author}}</dd>{{end}}
<dt>Entries</dt><dd>{{num .Count}}{{if .Next}} on this page; more on the next{{end}}</dd>
{{range .Links}}<dt>{{join .Rels ", "}}</dt><dd>{{template "link" .}}</dd>
{{end}}</dl>
{{template "pager" .Pager}}
{{if .Feed.Entries}}<div class="scroll"><table>
<thead><tr><th scope="col">Entry</th><th scope="col" class="num">Updated</th>{{if .Changes}}<th scope="col">Change</th>{{end}}{{if .Res}}<th scope="col">Resource</th>{{end}}<th scope="col">Links</th></tr></thead>
<tbody>
{{range .Feed.Entries}}{{$nav := $.Data.Nav .Links}}<tr class="entry">
<td class="url">{{if $nav}}<a class="title" href="{{$.Data.Href $nav}}">{{.Title}}</a>{{else}}<span class="title">{{.Title}}</span>{{end}}<br><code class="muted id">{{.ID}}</code></td>
<td class="num">{{time .Updated}}</td>
{{if $.Data.Changes}}<td>{{with .Summary}}<span class="tag {{kind .}}">{{.}}</span>{{end}}</td>{{end}}
{{if $.Data.Res}}<td class="url">{{range .Resources}}<code class="resource">{{.}}</code> {{end}}</td>{{end}}
<td class="url links">{{range $i, $r := $.Data.ByRel .Links}}{{if $i}}<br>{{end}}<span class="muted">{{$r.Rel}}:</span> {{range $j, $g := $r.Links}}{{if $j}} · {{end}}{{template "short" $g}}{{end}}{{end}}</td>
</tr>
{{end}}</tbody></table></div>
{{template "pager" .Pager}}
{{else}}<p class="muted">This feed has no entries.</p>{{end}}
{{end}}{{end}}
{{define "link"}}{{if .Live}}<a href="{{.Href}}"{{with .Type}} type="{{.}}"{{end}}>{{if .Type}}{{.Type}}{{else}}{{.Full}}{{end}}</a>{{if .Type}} <code class="muted">{{.Full}}</code>{{end}}{{else}}<code>{{.Full}}</code>{{with .Type}} ({{.}}){{end}}{{end}}{{end}}
{{define "short"}}{{if .Live}}<a href="{{.Href}}"{{with .Type}} type="{{.}}"{{end}} title="{{.Full}}">{{or .Type .Full}}</a>{{else}}<code>{{.Full}}</code>{{with .Type}} ({{.}}){{end}}{{end}}{{end}}
{{define "pager"}}{{if .}}<nav class="pager" aria-label="Pages">{{range .}}<a href="{{.Href}}" rel="{{.Rel}}">{{.Text}}</a>{{end}}</nav>{{end}}{{end}}
`

var tpl = web.New("atomview", content, template.FuncMap{
	"join": strings.Join,
	"kind": kind,
})

// Render writes f as an HTML page to w (headers are the caller's: see
// web.SetHeaders).
func Render(w io.Writer, f *atom.Feed, o Options) error {
	r := renderer{base: o.Base}
	d := &data{renderer: r, Feed: f, Count: int64(len(f.Entries))}
	for _, e := range f.Entries {
		d.Changes = d.Changes || e.Summary != ""
		d.Res = d.Res || len(e.Resources) > 0
	}
	var rest []atom.Link
	for _, l := range f.Links {
		if p := pagerText(l.Rel); p != "" && Live(l.Href) {
			d.Pager = append(d.Pager, pagerLink{Href: r.Href(l.Href), Text: p, Rel: l.Rel})
			d.Next = d.Next || l.Rel == "next"
		}
		rest = append(rest, l)
	}
	d.Links = r.Groups(rest)
	title := o.Title
	if title == "" {
		title = f.Title
	}
	return web.Render(w, tpl, web.Page{Title: title, Crumbs: o.Crumbs, Footer: o.Footer, Data: d})
}

func pagerText(rel string) string {
	for _, p := range pagerRels {
		if p.rel == rel {
			return p.text
		}
	}
	return ""
}

type renderer struct{ base string }

// Href writes a link below the base as a root-relative path.
func (r renderer) Href(s string) string {
	if r.base == "" {
		return s
	}
	rest, ok := strings.CutPrefix(s, r.base)
	if !ok {
		return s
	}
	u, err := url.Parse(r.base)
	if err != nil {
		return s
	}
	return u.EscapedPath() + rest
}

// Nav returns what an entry's title leads to: the href of its first live
// Atom link (the feed it announces), else of its first live text/plain
// link (data a browser shows: a fragment, a snapshot, a chunk), or "".
func (r renderer) Nav(ls []atom.Link) string {
	for _, want := range []func(string) bool{isAtom, isText} {
		for _, l := range ls {
			if want(l.Type) && Live(l.Href) {
				return l.Href
			}
		}
	}
	return ""
}

func isText(t string) bool {
	mt, _, _ := strings.Cut(t, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/plain")
}

func isAtom(t string) bool {
	mt, _, _ := strings.Cut(t, ";")
	return strings.EqualFold(strings.TrimSpace(mt), sdshare.AtomType)
}

// Groups folds links to the same href and type into one group, in the
// order of their first link; "alternate" is dropped from a group that has
// another rel (SDShare repeats every link as an alternate).
func (r renderer) Groups(ls []atom.Link) []LinkGroup {
	var out []LinkGroup
	for _, l := range ls {
		rel := ShortRel(l.Rel)
		i := 0
		for i < len(out) && (out[i].Full != l.Href || out[i].Type != l.Type) {
			i++
		}
		if i == len(out) {
			out = append(out, LinkGroup{Href: r.Href(l.Href), Full: l.Href, Type: l.Type, Live: Live(l.Href)})
		}
		g := &out[i]
		dup := false
		for _, x := range g.Rels {
			dup = dup || x == rel
		}
		if !dup {
			g.Rels = append(g.Rels, rel)
		}
	}
	for i := range out {
		if g := &out[i]; len(g.Rels) > 1 {
			rels := g.Rels[:0]
			for _, x := range g.Rels {
				if x != "alternate" {
					rels = append(rels, x)
				}
			}
			g.Rels = rels
		}
	}
	return out
}

// RelLinks are the link groups of one set of rels.
type RelLinks struct {
	Rel   string // the rels, joined with ", "
	Links []LinkGroup
}

// ByRel groups ls (see Groups) by their rels, in the order of their first
// link: a fragment entry's four formats become one "fragment" row.
func (r renderer) ByRel(ls []atom.Link) []RelLinks {
	var out []RelLinks
	for _, g := range r.Groups(ls) {
		rel := strings.Join(g.Rels, ", ")
		i := 0
		for i < len(out) && out[i].Rel != rel {
			i++
		}
		if i == len(out) {
			out = append(out, RelLinks{Rel: rel})
		}
		out[i].Links = append(out[i].Links, g)
	}
	return out
}

// ShortRel names a link relation for people: "" is "alternate", the
// SDShare namespaces are dropped ("fragment", "snapshotsfeed").
func ShortRel(rel string) string {
	switch {
	case rel == "":
		return "alternate"
	case strings.HasPrefix(rel, sdshare.NS) && len(rel) > len(sdshare.NS):
		return rel[len(sdshare.NS):]
	case strings.HasPrefix(rel, sdshare.LegacyNS+"/") && len(rel) > len(sdshare.LegacyNS)+1:
		return rel[len(sdshare.LegacyNS)+1:]
	}
	return rel
}

// Live reports whether href may be written as a link: an absolute http or
// https URL with a host, or a relative reference (no scheme). Anything
// else (javascript:, data:, mailto:, urn:, a malformed URL) is shown as
// text.
func Live(href string) bool {
	if href == "" || strings.ContainsAny(href, "\x00\t\n\r") {
		return false
	}
	u, err := url.Parse(href)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "":
		return !strings.Contains(strings.SplitN(href, "/", 2)[0], ":")
	case "http", "https":
		return u.Host != ""
	}
	return false
}

// kind is the CSS class of a change kind ("" for other summaries).
func kind(s string) string {
	switch s {
	case "created", "updated", "deleted":
		return s
	}
	return ""
}
