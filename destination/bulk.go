package destination

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/resourcesync-go/resourcesync/destination/discover"
	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/internal/bulk"
	"github.com/resourcesync-go/resourcesync/internal/watchdog"
	"github.com/resourcesync-go/resourcesync/rs"
)

// The bulk GET of our own Source (package internal/bulk): when the
// Resource List's response advertises the endpoint, a baseline's workers
// take the small resources of the list a batch at a time and fetch each
// batch in one request. Every member is installed by fetch.Install
// against the Resource List's length and digests, exactly as a Resource
// Dump member is; a member the Source did not send (its status said why),
// or that fails its check, is then fetched by a plain GET (p.work), which
// retries, reports and fails it as usual. A broken stream (a member not
// asked for, a wrong length, a truncation) sends the rest of the batch
// the same way; a bulk request that fails outright turns the bulk GET off
// for the pass.

// bulkBatch is the most resources a worker asks for in one request; a
// worker sends what it holds sooner when no more jobs wait.
const bulkBatch = 256

// bulkGet is a pass's bulk endpoint.
type bulkGet struct {
	url, base string // the endpoint; the resources' URLs start with base
	client    *http.Client
	limits    watchdog.Limits
	off       atomic.Bool
	failures  atomic.Int32
}

// useBulk turns the bulk GET on for the pass when the Resource List d's
// response advertises one that the pass can use (bulkOffered).
func (p *pass) useBulk(d *discover.Doc) {
	e := p.e
	if p.fetcher != nil {
		return
	}
	href, ok := e.bulkOffered(d, d.URL)
	if !ok {
		return
	}
	c := *e.f.Client
	if e.f.Origin != nil {
		c = *e.f.Origin.Client(e.f.Client)
	}
	// A redirect is no bulk answer: the resources are then fetched one
	// by one, each request checked as usual.
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	p.bulk.Store(&bulkGet{url: href, base: strings.TrimSuffix(href, bulk.Path), client: &c,
		limits: watchdog.Limits{Idle: e.f.StallTimeout, MinRate: e.f.MinRate, Window: e.f.MinRateWindow}})
}

// bulkOffered returns the bulk endpoint that document d's response
// advertises, when it is on d's own origin and on that of list (the
// Resource List whose entries a pass would ask for by it), has the shape
// our Source gives it, and the run installs files the plain way (not a
// dry run, no Target, no --rate: a bulk request would defeat a
// per-request rate). A pass without a notification fetcher then takes
// it (useBulk), and a baseline skips the Resource Dump for it
// (dumpBaseline).
func (e *engine) bulkOffered(d *discover.Doc, list string) (string, bool) {
	href := d.HeaderLink(bulk.Rel)
	if href == "" || e.opt.DryRun || e.st.readOnly || e.tg != nil || e.f.RatePerHost > 0 {
		return "", false
	}
	hu, err1 := url.Parse(href)
	du, err2 := url.Parse(d.URL)
	lu, err3 := url.Parse(list)
	if err1 != nil || err2 != nil || err3 != nil || hu.RawQuery != "" || hu.Fragment != "" || hu.User != nil ||
		!strings.EqualFold(hu.Scheme, du.Scheme) || !strings.EqualFold(hu.Host, du.Host) ||
		!strings.EqualFold(hu.Scheme, lu.Scheme) || !strings.EqualFold(hu.Host, lu.Host) ||
		!strings.HasSuffix(hu.EscapedPath(), "/"+bulk.Path) {
		return "", false // another origin, or not the shape our Source gives it
	}
	if e.f.Origin != nil && e.f.Origin.Check(href) != nil {
		return "", false
	}
	return hu.String(), true
}

// bulkPath returns the path to ask for j by, or "" when j is fetched the
// plain way: a fresh install (no local file to look at first, nothing to
// keep) of a resource of known small length below the endpoint's base.
func (b *bulkGet) bulkPath(p *pass, j *job) string {
	if b.off.Load() || j.checkLocal || j.audit || j.foreign || j.forced || !j.e.MD.HasLength ||
		j.e.MD.Length < 0 || j.e.MD.Length > bulk.MaxMember || !strings.HasPrefix(j.e.Loc, b.base) {
		return ""
	}
	rel := j.e.Loc[len(b.base):]
	if rel == "" || strings.ContainsAny(rel, "?#") || strings.HasPrefix(rel, "/") {
		return ""
	}
	for i := 0; i < len(rel); i++ {
		if c := rel[i]; c <= ' ' || c == 0x7f {
			return ""
		}
	}
	if _, err := rs.DecodeDigests(j.e.MD.Hashes); err != nil {
		return "" // p.work fails it closed
	}
	return rel
}

// bulkJob is a job and the path it is asked for by.
type bulkJob struct {
	j    job
	path string
}

// runWorker is a worker's loop: jobs one by one, except that the small
// fresh installs are gathered and fetched a batch at a time while the
// bulk GET is on.
func (p *pass) runWorker(ctx context.Context, dirs *fetch.Parents) {
	var batch []bulkJob
	for {
		var j job
		var ok bool
		if len(batch) == 0 {
			j, ok = <-p.jobs
		} else {
			select {
			case j, ok = <-p.jobs:
			default:
				// Nothing waits: send what is held rather than wait.
				p.bulkRun(ctx, batch, dirs)
				batch = batch[:0]
				continue
			}
		}
		if !ok {
			break
		}
		if ctx.Err() != nil {
			continue // drain
		}
		if b := p.bulk.Load(); b != nil {
			if path := b.bulkPath(p, &j); path != "" {
				batch = append(batch, bulkJob{j, path})
				if len(batch) >= bulkBatch {
					p.bulkRun(ctx, batch, dirs)
					batch = batch[:0]
				}
				continue
			}
		}
		p.work(j, dirs)
	}
	if len(batch) > 0 && ctx.Err() == nil {
		p.bulkRun(ctx, batch, dirs)
	}
}

// bulkRun fetches a batch in one request and installs each member; what
// is not installed so is fetched by p.work afterwards (after the bulk
// response is closed: a retry's backoff must not hold it open).
func (p *pass) bulkRun(ctx context.Context, batch []bulkJob, dirs *fetch.Parents) {
	b := p.bulk.Load()
	rest := batch
	if b != nil && !b.off.Load() {
		rest = p.bulkFetch(ctx, b, batch, dirs)
	}
	for _, bj := range rest {
		if ctx.Err() != nil {
			return
		}
		p.work(bj.j, dirs)
	}
}

// bulkFetch makes the request and returns the jobs it did not install.
func (p *pass) bulkFetch(ctx context.Context, b *bulkGet, batch []bulkJob, dirs *fetch.Parents) (rest []bulkJob) {
	paths := make([]string, len(batch))
	for i := range batch {
		paths[i] = batch[i].path
	}
	var body strings.Builder
	if err := bulk.WriteRequest(&body, paths); err != nil {
		return batch
	}
	rctx, w := watchdog.Start(ctx, b.limits)
	defer w.Stop()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, b.url, strings.NewReader(body.String()))
	if err != nil {
		return batch
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("Accept", bulk.MediaType)
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := b.client.Do(req)
	if err != nil {
		b.failed(p, fmt.Sprintf("bulk GET %s: %v", b.url, err))
		return batch
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || mt != bulk.MediaType {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		b.failed(p, fmt.Sprintf("bulk GET %s: %s (%s)", b.url, resp.Status, mt))
		return batch
	}
	r := bulk.NewReader(w.Body(resp.Body), paths)
	for i, bj := range batch {
		j := &bj.j
		m, err := r.Next(j.e.MD.Length)
		if err != nil {
			// The stream cannot be trusted from here on.
			b.failed(p, fmt.Sprintf("bulk GET %s: %v", b.url, err))
			return append(rest, batch[i:]...)
		}
		if m.Status != http.StatusOK {
			rest = append(rest, bj)
			continue
		}
		res, err := fetch.InstallContext(ctx, m.Body, fetch.Request{Length: j.e.MD.Length, HasLength: true,
			Hashes: p.e.verifyHashes(j.e.MD.Hashes), Path: p.e.m.Path(j.rel), Dir: p.e.local, ModTime: p.installTime(&j.e),
			NoSync: !p.e.opt.FsyncEach && !p.fsyncEach, Parents: dirs})
		if err != nil {
			rest = append(rest, bj) // its GET says why, or installs the right bytes
			continue
		}
		res.URL, res.Attempts = j.e.Loc, 1
		p.installed(*j, res)
	}
	if _, err := r.Next(0); err != io.EOF {
		b.failed(p, fmt.Sprintf("bulk GET %s: %v", b.url, err))
	}
	return rest
}

// maxBulkFailures: bulk requests that may fail before the pass stops
// making them (a transient error is retried by the plain GETs anyway).
const maxBulkFailures = 3

func (b *bulkGet) failed(p *pass, msg string) {
	if b.failures.Add(1) == maxBulkFailures && !b.off.Swap(true) {
		p.e.emit(Event{Kind: EventWarning, Set: p.set, Message: msg + "; the resources are fetched one by one from here on"})
	}
}
