// Package docview renders a ResourceSync document (any capability, a list
// or an index, 1.1 or an older draft that package rs reads) as an HTML page
// in the toolkit's layout (package internal/web): its kind and root
// metadata, its root links as working links, and a table of its entries,
// paged.
//
// Rendering streams: the document is read once with rs.Decoder, the
// entries before the requested page are skipped, those of the page (at
// most PageSize) are held, and the rest are only counted, so memory does
// not grow with a 50,000-entry list. RenderPages writes every page of a
// document in one pass; Stream builds them from the entries while the
// document is written, without parsing it (the static companions of
// package source/publish).
//
// Everything taken from the document is untrusted: it reaches the page
// through html/template only, links only through its URL escaping, and
// only http and https URLs become links.
package docview

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/rs"
)

// DefaultPageSize is the number of entries per page when Options.PageSize
// is zero.
const DefaultPageSize = 1000

// Limits on what one page shows of hostile documents: longer strings are
// cut (and a cut URL is no link), further links and warnings are counted.
const (
	maxText     = 4096
	maxLinks    = 20
	maxHeadLink = 200
	maxWarnings = 20
	maxCrumbs   = 4
)

// Options tell Render how to link and what to show.
type Options struct {
	// Self is the document's own URL, shown under the title; optional.
	Self string
	// Page is the 1-based page to render; values below 1 mean 1, values
	// past the last page render the last page.
	Page int
	// PageSize is the number of entries per page; default DefaultPageSize.
	PageSize int
	// Link maps an absolute URL found in the document to the href the
	// page uses (a static companion's relative name); nil keeps it.
	Link func(href string) string
	// PageURL returns the href of page n (1-based) of this view; default
	// "?page=n".
	PageURL func(n int) string
	// Open, when set, opens the document at an absolute URL of the same
	// Source; the breadcrumbs then follow the up and index links of the
	// documents above this one (only their heads are read). It returns
	// an error for URLs it does not serve.
	Open func(href string) (io.ReadCloser, error)
	// Footer links, shown at the bottom of the page.
	Footer []web.Link
	// Limits for the decoder; zero fields take rs.DefaultLimits.
	Limits rs.Limits
}

// Result says what Render found.
type Result struct {
	Kind    string // e.g. "Resource List Index"
	Entries int    // entries in the whole document (up to a fatal error)
	Pages   int    // at least 1
	Page    int    // the page rendered
	Err     error  // a fatal error of the document, also shown on the page
}

// Kind names a document by its capability and root element.
func Kind(h *rs.Head) string {
	names := map[rs.Capability]string{
		rs.CapDescription:           "Source Description",
		rs.CapCapabilityList:        "Capability List",
		rs.CapResourceList:          "Resource List",
		rs.CapResourceDump:          "Resource Dump",
		rs.CapResourceDumpManifest:  "Resource Dump Manifest",
		rs.CapChangeList:            "Change List",
		rs.CapChangeDump:            "Change Dump",
		rs.CapChangeDumpManifest:    "Change Dump Manifest",
		rs.CapResourceListArchive:   "Resource List Archive",
		rs.CapResourceDumpArchive:   "Resource Dump Archive",
		rs.CapChangeListArchive:     "Change List Archive",
		rs.CapChangeDumpArchive:     "Change Dump Archive",
		rs.CapChangeNotification:    "Change Notification",
		rs.CapFrameworkNotification: "Framework Notification",
	}
	n, ok := names[h.MD.Capability]
	switch {
	case !ok && h.MD.Capability == "":
		n = "Sitemap"
	case !ok:
		n = "ResourceSync document"
	}
	if h.IsIndex() {
		n += " Index"
	}
	return n
}

// Render writes the HTML page of the document read from r. A document
// that is not well-formed, or not a Sitemap, still gets a page (with the
// entries read before the error and the error itself); Result.Err holds
// that error. The returned error is the writer's.
func Render(w io.Writer, r io.Reader, o Options) (Result, error) {
	o.defaults()
	v, dec := o.start(r)
	first := (o.Page - 1) * o.PageSize
	var e rs.Entry
	n := 0
	for v.Err == "" {
		err := dec.NextInto(&e)
		if err == io.EOF {
			break
		}
		if err != nil {
			v.Err = errText(err)
			break
		}
		if n >= first && n < first+o.PageSize {
			v.Rows = append(v.Rows, o.row(n+1, &e))
		}
		n++
		if n%1024 == 0 {
			dec.TakeDiagnostics()
		}
	}
	pages := max(1, (n+o.PageSize-1)/o.PageSize)
	if o.Page > pages && v.Err == "" {
		// Past the end: a second pass is not possible on a stream, so
		// say so; the pager leads back.
		v.Note = fmt.Sprintf("There is no page %d; the document has %d.", o.Page, pages)
	}
	o.finish(v, n, o.Page, pages, first)
	res := Result{Kind: v.Kind, Entries: n, Pages: pages, Page: o.Page}
	if v.Err != "" {
		res.Err = errors.New(v.Err)
	}
	return res, web.Render(w, pageTpl, o.page(v))
}

// RenderPages writes every page of the document read from r in one pass:
// page n (1-based) goes to the writer that open(n) returns, and done is
// called once the page is complete, with the rendering's error (nil: keep
// the page; else discard it). total is the number of entries, from Count;
// it sets the number of pages. An error of the document is shown on the
// page where it occurs, which is then the last. Pages are rendered on up
// to four cores while the document is read (open and done must allow
// that); memory holds at most a page per core. The returned error is
// open's, a writer's or done's.
func RenderPages(r io.Reader, total int, o Options, open func(n int) (w io.Writer, done func(error) error, err error)) (Result, error) {
	o.defaults()
	v, dec := o.start(r)
	pages := max(1, (total+o.PageSize-1)/o.PageSize)
	res := Result{Kind: v.Kind, Pages: pages}
	head := *v
	head.Rows = nil

	type job struct {
		n int
		v *view
	}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	failed := func() bool { mu.Lock(); defer mu.Unlock(); return firstErr != nil }
	render := func(j job) {
		if failed() {
			return
		}
		w, done, err := open(j.n)
		if err == nil {
			err = done(web.Render(w, pageTpl, o.page(j.v)))
		}
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
	}
	workers := 1
	if total > o.PageSize {
		workers = min(runtime.GOMAXPROCS(0), 4)
	}
	jobs := make(chan job)
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				render(j)
			}
		})
	}
	var e rs.Entry
	n, page := 0, 1
	// emit hands the page read so far to a worker; the view is computed
	// here, where the decoder's head (which a late root rs:md or rs:ln
	// changes) is not read concurrently.
	emit := func() {
		o.finish(v, max(n, total), page, max(pages, page), (page-1)*o.PageSize)
		jobs <- job{page, v}
		res.Page = page
		page++
		nv := head
		nv.Rows = make([]row, 0, min(o.PageSize, max(total-n, 1)))
		v = &nv
	}
	for v.Err == "" && !failed() {
		err := dec.NextInto(&e)
		if err == io.EOF {
			break
		}
		if err != nil {
			v.Err = errText(err)
			break
		}
		if len(v.Rows) == o.PageSize {
			emit()
		}
		v.Rows = append(v.Rows, o.row(n+1, &e))
		n++
		if n%1024 == 0 {
			dec.TakeDiagnostics()
		}
	}
	res.Entries = n
	if v.Err != "" {
		res.Err = errors.New(v.Err)
	}
	if !failed() {
		emit()
	}
	close(jobs)
	wg.Wait()
	res.Pages = res.Page
	return res, firstErr
}

// Count returns the number of entries of the document read from r (up to
// a fatal error, which it also returns).
func Count(r io.Reader) (int, error) {
	dec := rs.NewDecoder(r)
	var e rs.Entry
	n := 0
	for {
		err := dec.NextInto(&e)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
		if n%1024 == 0 {
			dec.TakeDiagnostics()
		}
	}
}

func (o *Options) defaults() {
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.Page < 1 {
		o.Page = 1
	}
	if o.Link == nil {
		o.Link = func(s string) string { return s }
	}
	if o.PageURL == nil {
		o.PageURL = func(n int) string { return "?page=" + strconv.Itoa(n) }
	}
}

// view is the template's data.
type view struct {
	Kind     string
	Self     string
	Legacy   string
	Facts    []fact
	Links    []link
	More     int // root links not shown
	Warnings []string
	Err      string
	Note     string
	Rows     []row
	RowsHTML template.HTML // Rows, written by rowsHTML
	Pager    *pager
	Total    int
	Index    bool
	Change   bool // a change kind: show change and datetime
	HasMore  bool // a row has more metadata or links
	Docs     bool // the entries are documents
	// Columns shown: some row of the page has a value for them.
	ColCap, ColWhen, ColSize, ColHash, ColType bool
	Crumbs                                     []web.Link
	Footer                                     []web.Link
	head                                       *rs.Head
}

type fact struct{ Name, Value string }

type link struct {
	Rel, Href, Text, Extra string
}

type row struct {
	N         string
	Loc, Href string
	LastMod   string // shown: to the second, in UTC
	LastModAt string // as written
	Change    string
	DateTime  string
	DateAt    string
	Size      string
	Exact     string
	Hash      string // the hashes, shortened
	HashTitle string // in full
	Type      string
	MD        string
	Cap       string // the capability of the document an entry names
	Links     []link
	More      int
}

type pager struct {
	From, To, Total int
	Page, Pages     int
	First, Prev     string
	Next, Last      string
	Nums            []pageNum
}

type pageNum struct {
	N       int
	Href    string
	Current bool
}

func (o *Options) start(r io.Reader) (*view, *rs.Decoder) {
	dec := rs.NewDecoder(r)
	dec.Limits = o.Limits
	v := &view{Self: cut(o.Self), Footer: o.Footer}
	h, err := dec.Head()
	if err != nil {
		v.Kind = "Unreadable document"
		v.Err = errText(err)
		return v, dec
	}
	v.head = h
	v.Legacy = dec.Legacy()
	o.headFacts(v)
	for _, d := range dec.TakeDiagnostics() {
		if len(v.Warnings) == maxWarnings {
			break
		}
		v.Warnings = append(v.Warnings, cut(d.String()))
	}
	v.Crumbs = o.crumbs(h)
	return v, dec
}

// headFacts fills what the view shows of the head (again at the end: root
// rs:md and rs:ln after the first item are merged into it).
func (o *Options) headFacts(v *view) {
	h := v.head
	if h == nil {
		return
	}
	v.Kind = Kind(h)
	v.Index = h.IsIndex()
	v.Change = h.MD.Capability.IsChange()
	v.Facts, v.Links, v.More = nil, nil, 0
	md := &h.MD
	if md.Capability != "" {
		v.Facts = append(v.Facts, fact{"capability", cut(string(md.Capability))})
	}
	v.Facts = append(v.Facts, fact{"root element", h.Root.String()})
	v.Facts = appendTimes(v.Facts, md)
	v.Facts = appendOther(v.Facts, md)
	for i := range h.Links {
		if i == maxHeadLink {
			v.More = len(h.Links) - i
			break
		}
		v.Links = append(v.Links, o.link(&h.Links[i]))
	}
}

func (o *Options) finish(v *view, total, page, pages, first int) {
	o.headFacts(v)
	o.columns(v)
	v.RowsHTML = rowsHTML(v)
	o.pager(v, total, page, pages, first, len(v.Rows))
}

// columns sets the columns and flags that depend on the rows of the page.
func (o *Options) columns(v *view) {
	v.HasMore, v.ColCap, v.ColWhen, v.ColSize, v.ColHash, v.ColType = false, false, false, false, false, false
	for i := range v.Rows {
		r := &v.Rows[i]
		v.Change = v.Change || r.Change != ""
		v.HasMore = v.HasMore || r.MD != "" || len(r.Links) > 0
		v.ColCap = v.ColCap || r.Cap != ""
		v.ColWhen = v.ColWhen || r.LastMod != "" || r.DateTime != ""
		v.ColSize = v.ColSize || r.Size != ""
		v.ColHash = v.ColHash || r.Hash != ""
		v.ColType = v.ColType || r.Type != ""
	}
	v.Docs = v.Index || v.ColCap
}

// pager sets the total and the pager of a page of rows entries.
func (o *Options) pager(v *view, total, page, pages, first, rows int) {
	v.Total = total
	if pages > 1 {
		p := &pager{Total: total, Page: min(page, pages), Pages: pages}
		p.From = min(first+1, total)
		p.To = min(first+rows, total)
		if rows == 0 {
			p.From, p.To = 0, 0
		}
		if p.Page > 1 {
			p.First, p.Prev = o.PageURL(1), o.PageURL(p.Page-1)
		}
		if p.Page < pages {
			p.Next, p.Last = o.PageURL(p.Page+1), o.PageURL(pages)
		}
		for n := max(1, p.Page-3); n <= min(pages, p.Page+3); n++ {
			p.Nums = append(p.Nums, pageNum{N: n, Href: o.PageURL(n), Current: n == p.Page})
		}
		v.Pager = p
	} else {
		v.Pager = nil
	}
}

func (o *Options) page(v *view) web.Page {
	title := v.Kind
	if v.Pager != nil {
		title += fmt.Sprintf(" (page %d of %d)", v.Pager.Page, v.Pager.Pages)
	}
	return web.Page{Title: title, Crumbs: v.Crumbs, Footer: v.Footer, Data: v}
}

// crumbs follows the up and index links above the document, reading the
// heads of those documents with Open, nearest last.
func (o *Options) crumbs(h *rs.Head) []web.Link {
	var out []web.Link
	seen := map[string]bool{o.Self: true}
	add := func(href, text string) {
		out = append([]web.Link{{Href: o.Link(href), Text: text}}, out...)
	}
	cur := h
	for range maxCrumbs {
		next := ""
		if ix := cur.Link(rs.RelIndex); ix != "" && !seen[ix] && cur.Root == rs.URLSet && httpURL(ix) {
			next = ix
		} else if up := cur.Link(rs.RelUp); up != "" && !seen[up] && httpURL(up) {
			next = up
		}
		if next == "" || len(next) > maxText {
			break
		}
		seen[next] = true
		nh := o.openHead(next)
		if nh == nil {
			add(next, guessKind(cur, next))
			// Without the parent's head, its own parents are unknown,
			// except the up link of a list that also has an index.
			if up := cur.Link(rs.RelUp); up != next && up != "" && !seen[up] && httpURL(up) && len(up) <= maxText {
				add(up, guessKind(cur, up))
			}
			break
		}
		add(next, Kind(nh))
		cur = nh
	}
	return out
}

func guessKind(child *rs.Head, href string) string {
	if child.Link(rs.RelIndex) == href {
		return "Index"
	}
	switch child.MD.Capability {
	case rs.CapCapabilityList:
		return "Source Description"
	case rs.CapDescription:
		return "Up"
	}
	return "Capability List"
}

func (o *Options) openHead(href string) *rs.Head {
	if o.Open == nil {
		return nil
	}
	rc, err := o.Open(href)
	if err != nil {
		return nil
	}
	defer rc.Close()
	dec := rs.NewDecoder(io.LimitReader(rc, 1<<20))
	dec.Limits = o.Limits
	h, err := dec.Head()
	if err != nil {
		return nil
	}
	return h
}

func appendTimes(fs []fact, md *rs.Metadata) []fact {
	for _, t := range []struct {
		name string
		v    rs.Time
	}{{"at", md.At}, {"completed", md.Completed}, {"from", md.From}, {"until", md.Until}, {"datetime", md.DateTime}, {"modified", md.Modified}} {
		if !t.v.IsZero() {
			fs = append(fs, fact{t.name, t.v.String()})
		}
	}
	return fs
}

func appendOther(fs []fact, md *rs.Metadata) []fact {
	if md.HasLength {
		fs = append(fs, fact{"length", strconv.FormatInt(md.Length, 10)})
	}
	if len(md.Hashes) > 0 {
		fs = append(fs, fact{"hash", cut(md.Hashes.String())})
	}
	for _, kv := range [][2]string{{"type", md.Type}, {"encoding", md.Encoding}, {"path", md.Path}} {
		if kv[1] != "" {
			fs = append(fs, fact{kv[0], cut(kv[1])})
		}
	}
	for i, a := range md.Extra {
		if i == maxLinks {
			break
		}
		fs = append(fs, fact{cut(a.Local), cut(a.Value)})
	}
	return fs
}

func (o *Options) link(l *rs.Link) link {
	out := link{Rel: cut(l.Rel), Text: cut(l.Href)}
	if httpURL(l.Href) && len(l.Href) <= maxText {
		out.Href = o.Link(l.Href)
	}
	var extra []string
	if l.Type != "" {
		extra = append(extra, "type "+l.Type)
	}
	if l.HasLength {
		extra = append(extra, web.HumanBytes(l.Length))
	}
	if !l.Modified.IsZero() {
		extra = append(extra, "modified "+l.Modified.String())
	}
	if l.Pri != 0 {
		extra = append(extra, "pri "+strconv.Itoa(l.Pri))
	}
	if l.Path != "" {
		extra = append(extra, "path "+l.Path)
	}
	if len(l.Hashes) > 0 {
		extra = append(extra, l.Hashes.String())
	}
	out.Extra = cut(strings.Join(extra, ", "))
	return out
}

func (o *Options) row(n int, e *rs.Entry) row {
	r := row{N: strconv.Itoa(n), Loc: cut(e.Loc)}
	if httpURL(e.Loc) && len(e.Loc) <= maxText {
		r.Href = o.Link(e.Loc)
	}
	if !e.LastMod.IsZero() {
		r.LastMod, r.LastModAt = web.FormatTime(e.LastMod.Time()), e.LastMod.String()
	}
	md := &e.MD
	if md.Change != "" {
		r.Change = cut(string(md.Change))
	}
	if !md.DateTime.IsZero() {
		r.DateTime, r.DateAt = web.FormatTime(md.DateTime.Time()), md.DateTime.String()
	}
	if md.HasLength {
		r.Size = web.HumanBytes(md.Length)
		r.Exact = web.Num(md.Length) + " bytes"
	}
	if len(md.Hashes) > 0 {
		// One digest shown (sha-256 where given), all in the title.
		var full strings.Builder
		shown := md.Hashes[0]
		for i, h := range md.Hashes {
			if i == maxLinks {
				break
			}
			if i > 0 {
				full.WriteByte('\n')
			}
			full.WriteString(h.Alg + ":" + h.Value)
			if h.Alg == rs.SHA256 {
				shown = h
			}
		}
		r.Hash, r.HashTitle = cut(shown.Alg+":"+web.Short(shown.Value)), cut(full.String())
	}
	var mds []string
	r.Type = cut(md.Type)
	if md.Capability != "" {
		r.Cap = cut(string(md.Capability))
	}
	for _, t := range []struct {
		name string
		v    rs.Time
	}{{"at", md.At}, {"completed", md.Completed}, {"from", md.From}, {"until", md.Until}, {"modified", md.Modified}} {
		if !t.v.IsZero() {
			mds = append(mds, t.name+" "+t.v.String())
		}
	}
	for _, kv := range [][2]string{{"encoding", md.Encoding}, {"path", md.Path}, {"changefreq", e.ChangeFreq}, {"priority", e.Priority}} {
		if kv[1] != "" {
			mds = append(mds, kv[0]+" "+kv[1])
		}
	}
	for i, a := range md.Extra {
		if i == maxLinks {
			break
		}
		mds = append(mds, a.Local+" "+a.Value)
	}
	r.MD = cut(strings.Join(mds, "; "))
	for i := range e.Links {
		if i == maxLinks {
			r.More = len(e.Links) - i
			break
		}
		r.Links = append(r.Links, o.link(&e.Links[i]))
	}
	return r
}

// httpURL reports whether s is an absolute http or https URL: one that
// url.Parse accepts with such a scheme and a host. Every row asks it; the
// common plain URL is recognised without url.Parse (a third of a Resource
// List row's cost), anything else is left to it (FuzzHTTPURL).
func httpURL(s string) bool {
	if plainHTTPURL(s) {
		return true
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// plainHTTPURL reports whether s is "http://" or "https://", a host of
// ASCII letters, digits, dots and hyphens with an optional numeric port,
// then nothing or "/" and bytes that url.Parse does not check except its
// escapes: no control character, each '%' followed by two hex digits.
// url.Parse accepts every such string; false means "ask it".
func plainHTTPURL(s string) bool {
	rest, ok := strings.CutPrefix(s, "http://")
	if !ok {
		if rest, ok = strings.CutPrefix(s, "https://"); !ok {
			return false
		}
	}
	i, port := 0, false
	for ; i < len(rest) && rest[i] != '/'; i++ {
		switch c := rest[i]; {
		case c == ':' && !port:
			port = true
		case '0' <= c && c <= '9':
		case port:
			return false
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '.', c == '-':
		default:
			return false
		}
	}
	if i == 0 || rest[0] == ':' {
		return false
	}
	for ; i < len(rest); i++ {
		switch c := rest[i]; {
		case c < 0x20 || c == 0x7f:
			return false
		case c == '%':
			if i+2 >= len(rest) || !isHex(rest[i+1]) || !isHex(rest[i+2]) {
				return false
			}
		}
	}
	return true
}

// cut shortens s to maxText bytes (at a rune boundary).
func cut(s string) string {
	if len(s) <= maxText {
		return s
	}
	i := maxText
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}

func errText(err error) string {
	return cut("This document could not be read to the end: " + err.Error())
}

var pageTpl = web.New("docview", content, template.FuncMap{"i64": func(i int) int64 { return int64(i) }})

const content = `{{define "content"}}{{with .Data}}<h1>{{.Kind}}</h1>
{{if .Self}}<p class="url"><code>{{.Self}}</code></p>{{end}}
<dl class="facts">{{range .Facts}}<dt>{{.Name}}</dt><dd>{{.Value}}</dd>{{end}}<dt>entries</dt><dd>{{num (i64 .Total)}}</dd>{{if .Legacy}}<dt>draft</dt><dd>read as ResourceSync {{.Legacy}}</dd>{{end}}</dl>
{{if .Links}}<h2>Links</h2>
<dl class="facts links">{{range .Links}}<dt>{{.Rel}}</dt><dd>{{if .Href}}<a href="{{.Href}}">{{.Text}}</a>{{else}}<code>{{.Text}}</code>{{end}}{{if .Extra}} <span class="muted">{{.Extra}}</span>{{end}}</dd>{{end}}{{if .More}}<dt>…</dt><dd class="muted">and {{.More}} more</dd>{{end}}</dl>{{end}}
{{if .Warnings}}<details><summary>{{len .Warnings}} warning(s)</summary><ul>{{range .Warnings}}<li class="warn">{{.}}</li>{{end}}</ul></details>{{end}}
{{if .Err}}<p class="bad" role="alert">{{.Err}}</p>{{end}}
{{if .Note}}<p class="warn">{{.Note}}</p>{{end}}
<h2 id="entries">Entries</h2>
{{template "pager" .Pager}}
{{if .Rows}}<div class="scroll"><table>
<thead><tr><th class="num" scope="col">#</th><th scope="col">{{if .Docs}}Document{{else}}Resource{{end}}</th>{{if .ColCap}}<th scope="col">Capability</th>{{end}}{{if .Change}}<th scope="col">Change</th>{{end}}{{if .ColWhen}}<th scope="col">Last modified</th>{{end}}{{if .ColSize}}<th class="num" scope="col">Size</th>{{end}}{{if .ColHash}}<th scope="col">Hash</th>{{end}}{{if .ColType}}<th scope="col">Type</th>{{end}}{{if .HasMore}}<th scope="col">More</th>{{end}}</tr></thead>
<tbody>{{.RowsHTML}}
</tbody></table></div>
{{else}}<p class="muted">No entries{{if .Pager}} on this page{{end}}.</p>{{end}}
{{template "pager" .Pager}}{{end}}{{end}}
{{define "pager"}}{{if .}}<nav class="pager" aria-label="Pages"><span>entries {{num (i64 .From)}}–{{num (i64 .To)}} of {{num (i64 .Total)}}</span>
{{if .First}}<a href="{{.First}}" rel="first">« first</a><a href="{{.Prev}}" rel="prev">‹ previous</a>{{end}}
{{range .Nums}}{{if .Current}}<span aria-current="page">{{.N}}</span>{{else}}<a href="{{.Href}}">{{.N}}</a>{{end}}{{end}}
{{if .Next}}<a href="{{.Next}}" rel="next">next ›</a><a href="{{.Last}}" rel="last">last »</a>{{end}}</nav>{{end}}{{end}}`
