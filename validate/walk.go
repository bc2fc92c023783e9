package validate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/httperr"
	"github.com/resourcesync-go/resourcesync/internal/linkheader"
	"github.com/resourcesync-go/resourcesync/rs"
)

// WalkSummary counts what Walk did.
type WalkSummary struct {
	Start     string // URL of the first document validated
	Documents int    // documents fetched and validated (well-formed or not)
	Entries   int64  // items in all documents
	Errors    int
	Warnings  int
	Skipped   int // documents not fetched because Options.MaxDocs was reached
}

// ErrNoSource is returned by Walk when no ResourceSync document could be
// fetched from the start URL or the well-known locations derived from it.
var ErrNoSource = errors.New("no ResourceSync document found")

const wellKnown = "/.well-known/resourcesync"

// Walk validates every document of the Source tree reachable from start:
// Source Description → Capability Lists → capability documents → index
// components, archives and archived documents. start may be a Source's base
// URL (when it is not a ResourceSync document itself - an HTML home page, say -
// the targets of its rel="resourcesync" Link headers,
// <base>/.well-known/resourcesync, the host's /.well-known/resourcesync
// and the Sitemap lines of the host's robots.txt are tried), the well-known URL, a Source
// Description, a Capability List or any capability document. Notification
// channels (topic URLs) and dump packages are not fetched.
//
// Every document is fetched once, at most opts.Concurrency at a time, and
// streamed through Document. Failed fetches are reported with rule RS-FETCH
// and the walk goes on. Walk returns an error (wrapping ErrNoSource or the
// context's error) only when the start itself cannot be fetched.
func Walk(ctx context.Context, client *http.Client, start string, opts Options, report func(Problem)) (*WalkSummary, error) {
	if client == nil {
		client = http.DefaultClient
	}
	if opts.MaxDocs <= 0 {
		opts.MaxDocs = 1000
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	w := &walker{client: client, opts: opts, out: report, seen: map[string]bool{},
		listers: map[string][]string{}, sem: make(chan struct{}, opts.Concurrency), sum: &WalkSummary{}}
	info, u, err := w.start(ctx, start)
	if err != nil {
		return w.sum, err
	}
	w.sum.Start = u
	if info != nil {
		w.descend(ctx, u, info)
	}
	for _, c := range w.relIndex {
		if !slices.ContainsFunc(w.listers[c.doc], func(l string) bool { return sameURL(l, c.target) }) {
			w.report(c.problem)
		}
	}
	return w.sum, ctx.Err()
}

// relIndexCheck is an RS-REL-2 problem that stands unless the index its
// component names also lists it.
type relIndexCheck struct {
	doc, target string
	problem     Problem
}

type walker struct {
	client *http.Client
	opts   Options
	out    func(Problem)
	sem    chan struct{}

	mu   sync.Mutex
	seen map[string]bool
	// listers maps a document to the indexes that list it, and relIndex
	// holds the components whose rel="index" names another index than
	// the one that claimed them: a component shared by several indexes
	// (Resource List parts kept across generations of an archive) may
	// name any of them, which is known only once the walk is over.
	listers   map[string][]string
	relIndex  []relIndexCheck
	sum       *WalkSummary
	warnedMax bool
	claimed   int
}

// report serialises problems from concurrent fetches and counts them.
func (w *walker) report(p Problem) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p.Severity == rs.SevError {
		w.sum.Errors++
	} else {
		w.sum.Warnings++
	}
	w.out(p)
}

// claim marks u as visited; false when it was already, or when the
// document limit is reached.
func (w *walker) claim(u string) bool {
	w.mu.Lock()
	if w.seen[u] {
		w.mu.Unlock()
		return false
	}
	w.seen[u] = true
	if w.claimed >= w.opts.MaxDocs {
		w.sum.Skipped++
		first := !w.warnedMax
		w.warnedMax = true
		w.mu.Unlock()
		if first {
			w.report(Problem{Doc: u, Rule: "RS-FETCH", Severity: rs.SevWarning,
				Message: fmt.Sprintf("document limit (%d) reached; this and further documents are not validated", w.opts.MaxDocs)})
		}
		return false
	}
	w.claimed++
	w.mu.Unlock()
	return true
}

// candidates lists the URLs tried for start, in order.
func candidates(start string) []string {
	u, err := url.Parse(start)
	if err != nil || strings.HasSuffix(u.Path, wellKnown) || strings.HasSuffix(u.Path, ".xml") {
		return []string{start}
	}
	out := []string{start}
	add := func(s string) {
		for _, x := range out {
			if x == s {
				return
			}
		}
		out = append(out, s)
	}
	b := *u
	b.RawQuery, b.Fragment = "", ""
	b.Path = strings.TrimSuffix(u.Path, "/") + wellKnown
	b.RawPath = ""
	add(b.String())
	b.Path = wellKnown
	add(b.String())
	return out
}

// notResourceSync reports whether a decoding error means that the body is
// not a ResourceSync document at all (an HTML page, another XML
// vocabulary, not XML), so that discovery goes on to the next candidate.
func notResourceSync(err error) bool {
	return errors.Is(err, rs.ErrRoot) || errors.Is(err, rs.ErrNamespace) || errors.Is(err, rs.ErrSyntax) ||
		errors.Is(err, rs.ErrDTD) || errors.Is(err, rs.ErrEntity) || errors.Is(err, rs.ErrEncoding) ||
		errors.Is(err, rs.ErrInvalidChar) || errors.Is(err, rs.ErrTruncated)
}

// isHTML reports whether a response's Content-Type says it is a web page.
func isHTML(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// start finds and validates the first document. A start URL that is not
// itself a ResourceSync document (an HTML home page, a 404) leads, in
// order, to the targets of its Link: <...>; rel="resourcesync" headers,
// the .well-known/resourcesync candidates, and the Sitemap lines of the
// host's robots.txt.
func (w *walker) start(ctx context.Context, start string) (*Info, string, error) {
	cands := candidates(start)
	direct := len(cands) == 1 // a document URL: no discovery, report its problems as they are
	var tried []string
	robots := direct
	for i := 0; i < len(cands); i++ {
		c := cands[i]
		resp, err := w.get(ctx, c)
		if err != nil {
			if ctx.Err() != nil {
				return nil, "", ctx.Err()
			}
			tried = append(tried, err.Error())
			if i == 0 && !direct {
				cands = linkCandidates(cands, err)
			}
		} else {
			final := resp.Request.URL.String()
			if i == 0 && !direct {
				cands = addLinks(cands, resp.Response)
			}
			if !direct && isHTML(resp.Header) {
				resp.cancel()
				tried = append(tried, fmt.Sprintf("%s: an HTML page (%s), not a ResourceSync document", final, resp.Header.Get("Content-Type")))
			} else if info, ok := w.first(final, c, resp, !direct, &tried); ok {
				return info, final, nil
			}
		}
		if i == len(cands)-1 && !robots {
			robots = true
			cands = append(cands, w.robotsSitemaps(ctx, start, &tried)...)
		}
	}
	return nil, "", fmt.Errorf("%w at %s (tried: %s)", ErrNoSource, start, strings.Join(tried, "; "))
}

// first validates the candidate document in resp. With probe, a body that
// is not a ResourceSync document is not reported: ok is false and the
// discovery goes on.
func (w *walker) first(final, c string, resp *response, probe bool, tried *[]string) (*Info, bool) {
	var buf []Problem
	rep := w.report
	if probe {
		rep = func(p Problem) { buf = append(buf, p) }
	}
	info, derr := Document(final, resp.Body, w.opts, rep)
	resp.cancel()
	if derr != nil && probe && notResourceSync(derr) {
		*tried = append(*tried, fmt.Sprintf("%s: %v", final, derr))
		return nil, false
	}
	for _, p := range buf {
		w.report(p)
	}
	w.mu.Lock()
	w.seen[final], w.seen[c] = true, true
	w.claimed++
	w.sum.Documents++
	if info != nil {
		w.sum.Entries += int64(info.Entries)
	}
	w.mu.Unlock()
	if derr != nil {
		var se *rs.SyntaxError
		if !errors.As(derr, &se) {
			w.report(Problem{Doc: final, Rule: "RS-FETCH", Severity: rs.SevError, Message: derr.Error()})
		}
	}
	return info, true
}

// linkCandidates is addLinks for a start URL whose response was not 200:
// its Link headers still count (a 404 page may carry them).
func linkCandidates(cands []string, err error) []string {
	var se *statusError
	if errors.As(err, &se) && se.resp != nil {
		return addLinks(cands, se.resp)
	}
	return cands
}

// addLinks inserts the targets of rel="resourcesync" Link headers of resp
// right after the start URL, before the well-known candidates.
func addLinks(cands []string, resp *http.Response) []string {
	links := resourceSyncLinks(resp.Request.URL, resp.Header.Values("Link"))
	if len(links) == 0 {
		return cands
	}
	out := append([]string{cands[0]}, links...)
	for _, c := range cands[1:] {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// resourceSyncLinks returns the absolute http(s) targets of the Link
// header values whose rel includes "resourcesync", resolved against base.
func resourceSyncLinks(base *url.URL, values []string) []string {
	var out []string
	for _, l := range linkheader.Parse(base, values) {
		if !l.HasRel("resourcesync") {
			continue
		}
		if u, err := url.Parse(l.URL); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
			out = append(out, u.String())
		}
	}
	return out
}

// robotsSitemaps returns the Sitemap lines of the robots.txt of start's
// host (at most 50, read from the first 512 KiB).
func (w *walker) robotsSitemaps(ctx context.Context, start string, tried *[]string) []string {
	su, err := url.Parse(start)
	if err != nil {
		return nil
	}
	ru := (&url.URL{Scheme: su.Scheme, Host: su.Host, Path: "/robots.txt"}).String()
	resp, err := w.get(ctx, ru)
	if err != nil {
		*tried = append(*tried, err.Error())
		return nil
	}
	defer resp.cancel()
	var out []string
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 512<<10))
	for sc.Scan() && len(out) < 50 {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "sitemap") {
			continue
		}
		if u, err := resp.Request.URL.Parse(strings.TrimSpace(v)); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
			out = append(out, u.String())
		}
	}
	if len(out) == 0 {
		*tried = append(*tried, ru+": no Sitemap line")
	}
	return out
}

// statusError is a response other than 200 OK; its headers are kept (the
// body is closed).
type statusError struct {
	url  string
	resp *http.Response
}

func (e *statusError) Error() string { return fmt.Sprintf("fetch %s: HTTP %s", e.url, e.resp.Status) }

// Unwrap returns the project's one status error (*httperr.StatusError).
func (e *statusError) Unwrap() error {
	return &httperr.StatusError{URL: e.url, Code: e.resp.StatusCode}
}

type response struct {
	*http.Response
	cancel func()
}

// get fetches u; the caller reads Body and then calls cancel.
func (w *walker) get(ctx context.Context, u string) (*response, error) {
	rctx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("fetch %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/xml, text/xml;q=0.9, */*;q=0.1")
	resp, err := w.client.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("fetch %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, &statusError{url: u, resp: resp}
	}
	return &response{Response: resp, cancel: func() { resp.Body.Close(); cancel() }}, nil
}

// parent is what a child document is checked against.
type parent struct {
	url   string
	head  *rs.Head
	index bool
}

// docSum is what a parent keeps of a fetched child.
type docSum struct {
	url     string
	head    rs.Head
	headPos rs.Pos
}

// job is a child document to fetch.
type job struct {
	url    string
	ref    ChildRef
	expect rs.Capability
}

// descend fetches the documents that the document at u (with info) lists.
func (w *walker) descend(ctx context.Context, u string, info *Info) {
	h := &info.Head
	cp := h.MD.Capability
	idx := h.Root == rs.SitemapIndex
	var jobs []job
	for _, c := range info.Children {
		j := job{url: resolve(u, c.Loc), ref: c}
		switch {
		case idx:
			j.expect = cp
		case cp == rs.CapDescription:
			j.expect = rs.CapCapabilityList
		case cp == rs.CapCapabilityList:
			if c.Capability == rs.CapChangeNotification || c.Capability == rs.CapFrameworkNotification {
				continue // a WebSub topic, not a document
			}
			j.expect = c.Capability
		case cp.IsArchive():
			j.expect = rs.Capability(strings.TrimSuffix(string(cp), "-archive"))
		default:
			continue
		}
		if j.url != "" {
			jobs = append(jobs, j)
			if idx {
				w.mu.Lock()
				w.listers[j.url] = append(w.listers[j.url], u)
				w.mu.Unlock()
			}
		}
	}
	if a := h.Link(rs.RelArchives); a != "" && cp.Known() && !cp.IsArchive() {
		jobs = append(jobs, job{url: resolve(u, a), expect: cp + "-archive"})
	}
	if len(jobs) == 0 {
		return
	}
	p := &parent{url: u, head: h, index: idx}
	sums := make([]*docSum, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		if ctx.Err() != nil || !w.claim(j.url) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[i] = w.visit(ctx, p, j)
		}()
	}
	wg.Wait()
	w.continuity(p, jobs, sums)
}

// visit fetches, validates and cross-checks one child, then descends.
func (w *walker) visit(ctx context.Context, p *parent, j job) *docSum {
	w.sem <- struct{}{}
	resp, err := w.get(ctx, j.url)
	if err != nil {
		<-w.sem
		w.report(Problem{Doc: j.url, Rule: "RS-FETCH", Severity: rs.SevError, Message: fmt.Sprintf("%v (listed by %s)", err, p.url)})
		return nil
	}
	final := resp.Request.URL.String()
	info, err := Document(final, resp.Body, w.opts, w.report)
	resp.cancel()
	<-w.sem
	w.mu.Lock()
	w.sum.Documents++
	if info != nil {
		w.sum.Entries += int64(info.Entries)
	}
	w.mu.Unlock()
	if err != nil {
		var se *rs.SyntaxError
		if !errors.As(err, &se) {
			w.report(Problem{Doc: final, Rule: "RS-FETCH", Severity: rs.SevError, Message: err.Error()})
		}
		return nil
	}
	w.crossCheck(p, j, final, info)
	w.descend(ctx, final, info)
	return &docSum{url: final, head: info.Head, headPos: info.HeadPos}
}

// crossCheck applies the rules that relate a child to its parent.
func (w *walker) crossCheck(p *parent, j job, u string, info *Info) {
	h := &info.Head
	pos := info.HeadPos
	emit := func(rule string, sev rs.Severity, format string, args ...any) {
		w.report(Problem{Doc: u, Line: pos.Line, Col: pos.Col, Rule: rule, Severity: sev, Message: fmt.Sprintf(format, args...)})
	}
	cp := h.MD.Capability
	if j.expect != "" && cp != j.expect {
		emit("RS-GEN-3", rs.SevError, "capability is %q but %s lists it as %q", cp, p.url, j.expect)
	}
	pc := p.head.MD.Capability
	up := h.Link(rs.RelUp)
	switch {
	case pc == rs.CapDescription || (pc == rs.CapCapabilityList && !p.index):
		if up != "" && !sameURL(resolve(u, up), p.url) {
			emit("RS-REL-1", rs.SevWarning, "rel=\"up\" points at %s, but the document is listed by %s", up, p.url)
		}
	case p.index:
		if pu := p.head.Link(rs.RelUp); up != "" && pu != "" && !sameURL(resolve(u, up), resolve(p.url, pu)) {
			emit("RS-REL-1", rs.SevWarning, "rel=\"up\" points at %s, but its index's up is %s", up, pu)
		}
		switch ix := h.Link(rs.RelIndex); {
		case ix == "":
			emit("RS-REL-2", rs.SevWarning, "component of the index %s has no root rs:ln rel=\"index\" back to it", p.url)
		case !sameURL(resolve(u, ix), p.url):
			w.mu.Lock()
			w.relIndex = append(w.relIndex, relIndexCheck{doc: u, target: resolve(u, ix), problem: Problem{
				Doc: u, Line: pos.Line, Col: pos.Col, Rule: "RS-REL-2", Severity: rs.SevWarning,
				Message: fmt.Sprintf("rel=\"index\" points at %s, but the document is listed by the index %s (and by no index it names)", ix, p.url)}})
			w.mu.Unlock()
		}
	}
	if !p.index && !pc.IsArchive() {
		return
	}
	rule := "RS-RLI-2"
	switch {
	case pc.IsArchive():
		rule = "RS-ARC-3"
	case pc.IsChange():
		rule = "RS-CHLI-3"
	}
	for _, a := range []struct {
		name        string
		item, child rs.Time
	}{
		{"at", j.ref.At, h.MD.At}, {"completed", j.ref.Completed, h.MD.Completed},
		{"from", j.ref.From, h.MD.From}, {"until", j.ref.Until, h.MD.Until},
	} {
		if !a.item.IsZero() && !a.item.Equal(a.child) {
			got := a.child.String()
			if a.child.IsZero() {
				got = "none"
			}
			emit(rule, rs.SevError, "root %s is %s but %s gives %s", a.name, got, p.url, a.item)
		}
	}
}

// continuity checks that consecutive change documents of an index or
// archive abut: next.from == previous.until (RS-DEST-3, RS-AMB-16).
func (w *walker) continuity(p *parent, jobs []job, sums []*docSum) {
	pc := p.head.MD.Capability
	var rule string
	sev := rs.SevError
	switch {
	case p.index && pc == rs.CapChangeList:
		rule = "RS-DEST-3"
	case p.index && pc == rs.CapChangeDump:
		rule, sev = "RS-DEST-3", rs.SevWarning
	case pc == rs.CapChangeListArchive || pc == rs.CapChangeDumpArchive:
		rule, sev = "RS-AMB-16", rs.SevWarning
	default:
		return
	}
	var prev *docSum
	for _, s := range sums {
		if s == nil {
			// Not visited from here (claimed by another parent, e.g. the
			// archive that also names it, or not fetched): its neighbours
			// are not consecutive, so nothing is compared across it.
			prev = nil
			continue
		}
		if prev != nil {
			pu, nf := prev.head.MD.Until, s.head.MD.From
			if !pu.IsZero() && !nf.IsZero() && !pu.Equal(nf) {
				what := "gap"
				if nf.Before(pu) {
					what = "overlap"
				}
				w.report(Problem{Doc: s.url, Line: s.headPos.Line, Col: s.headPos.Col, Rule: rule, Severity: sev,
					Message: fmt.Sprintf("not contiguous with the previous change document %s (%s): from %s, previous until %s", prev.url, what, nf, pu)})
			}
		}
		prev = s
	}
}

// resolve makes ref absolute against base; "" when it cannot.
func resolve(base, ref string) string {
	b, err := url.Parse(base)
	if err != nil {
		return ref
	}
	r, err := url.Parse(strings.TrimSpace(ref))
	if err != nil {
		return ""
	}
	return b.ResolveReference(r).String()
}

func sameURL(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return a == b
	}
	ua.Scheme, ub.Scheme = strings.ToLower(ua.Scheme), strings.ToLower(ub.Scheme)
	ua.Host, ub.Host = strings.ToLower(ua.Host), strings.ToLower(ub.Host)
	ua.Fragment, ub.Fragment = "", ""
	return ua.String() == ub.String()
}
