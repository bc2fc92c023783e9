package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/resourcesync-go/resourcesync/feed"
	"github.com/resourcesync-go/resourcesync/feed/activity"
	"github.com/resourcesync-go/resourcesync/internal/web"
)

var feedView = web.New("feed", `{{define "content"}}{{with .Data}}
<h1>{{.Title}}</h1>
<p>{{.Kind}}.{{if .Total}} {{num .Total}} activities in all.{{end}}{{if .Start}} This page starts at activity {{num .Start}}.{{end}}</p>
<p>{{if .First}}<a href="{{.First}}">first page</a> · {{end}}{{if .Prev}}<a href="{{.Prev}}" rel="prev">previous page</a> · {{end}}{{if .Next}}<a href="{{.Next}}" rel="next">next page</a> · {{end}}{{if .Last}}<a href="{{.Last}}">last page</a>{{end}}</p>
{{if .Items}}<table><thead><tr><th>activity</th><th>object</th><th>time</th></tr></thead><tbody>
{{range .Items}}<tr><td>{{.Type}}</td><td>{{if .Object}}<a href="{{.Object.ID}}">{{.Object.ID}}</a>{{end}}</td><td>{{.EndTime.UTC.Format "2006-01-02 15:04:05Z07:00"}}</td></tr>
{{end}}</tbody></table>{{end}}{{end}}{{end}}`, nil)

type feedViewData struct {
	Title, Kind             string
	Total, Start            int64
	First, Prev, Next, Last string
	Items                   []activity.Activity
}

// serveFeedHTML answers a browser's navigation to a feed document with a
// readable page: the Change Discovery collection or page (an LDES node
// shows the same activities: it holds the same changes), with links along
// the stream and to the machine representations.
func (h *Handler) serveFeedHTML(w http.ResponseWriter, r *http.Request, dir, name string) bool {
	src, kind := name, "IIIF Change Discovery 1.0 page"
	switch {
	case name == feed.CollectionFile:
		kind = "IIIF Change Discovery 1.0 collection"
	case name == feed.StreamFile:
		src, kind = feed.CollectionFile, "Linked Data Event Stream (ldes:EventStream); its nodes hold the changes of the Change Discovery pages"
	case strings.HasPrefix(name, "ldes-"):
		n, ok := pageNumber(name)
		if !ok {
			return false
		}
		src, kind = feed.PageFile(n), "LDES node (tree:Node): the changes of the Change Discovery page of the same number"
	}
	f, err := openInside(h.Docs, dir+src)
	if err != nil {
		http.NotFound(w, r)
		return true
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<20))
	f.Close()
	if err != nil {
		http.NotFound(w, r)
		return true
	}
	d := feedViewData{Title: name, Kind: kind}
	var doc struct {
		activity.Page
		TotalItems int64         `json:"totalItems"`
		First      *activity.Ref `json:"first"`
		Last       *activity.Ref `json:"last"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		h.log().Error("server: feed document does not parse", "doc", dir+src, "err", err)
		http.Error(w, "feed document unreadable", http.StatusInternalServerError)
		return true
	}
	ref := func(r *activity.Ref) string {
		if r == nil {
			return ""
		}
		return r.ID
	}
	d.Total, d.Start, d.Items = doc.TotalItems, doc.StartIndex, doc.OrderedItems
	d.First, d.Prev, d.Next, d.Last = ref(doc.First), ref(doc.Prev), ref(doc.Next), ref(doc.Last)
	hd := w.Header()
	web.SetHeaders(hd)
	hd.Set("Cache-Control", "no-cache")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return true
	}
	release, ok := web.Acquire(w, r)
	if !ok {
		return true
	}
	defer release()
	footer := []web.Link{{Href: name + "?format=json", Text: "machine representation"}}
	if strings.HasSuffix(name, ".ttl") {
		footer = append(footer, web.Link{Href: name + "?format=jsonld", Text: "JSON-LD"})
	}
	web.Render(w, feedView, web.Page{Title: name, Footer: footer, Data: d})
	return true
}
