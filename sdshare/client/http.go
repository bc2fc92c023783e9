package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/httperr"
	"github.com/resourcesync-go/resourcesync/internal/origin"
	"github.com/resourcesync-go/resourcesync/internal/redact"
	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/internal/watchdog"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare"
	"github.com/resourcesync-go/resourcesync/sdshare/atom"
)

// StatusError is an HTTP response other than the one expected: the
// project's one status error (package httperr).
type StatusError = httperr.StatusError

// ErrNotReady: the server kept answering 202 Accepted (a snapshot being
// built) for longer than Config.MaxWait.
var ErrNotReady = errors.New("sdshare client: server still preparing the document (202)")

// ErrTooLarge: a fragment is longer than Config.MaxFragmentBytes.
var ErrTooLarge = errors.New("sdshare client: document too large")

// Errors of a response abandoned by Config.StallTimeout or Config.MinRate
// (the same as sync's: internal/watchdog), matched with errors.Is.
var (
	ErrStalled = watchdog.ErrStalled
	ErrTooSlow = watchdog.ErrTooSlow
)

// fetcher does the client's GETs with the project's retry policy.
type fetcher struct {
	hc      *http.Client
	bulkHC  *http.Client // hc without redirects, for bulk requests
	policy  retry.Policy
	maxWait time.Duration // total wait on 202s for one document
	ua      string
	limits  watchdog.Limits // per request: headers and every body byte

	origin     *origin.Policy // where requests may go
	maxURL     int            // bytes of a URL without its fragment
	maxFeed    int64          // bytes of one feed document
	maxRunFeed int64          // bytes of all feed documents of the run
	feedBytes  int64          // read so far

	// waits holds, by pageKey, the --max-wait deadline of each URL that
	// answered 202 in this run: a body that then breaks off is retried
	// (get, snapshot) within the first 202's deadline, not a new one.
	waits   map[uint64]time.Time
	waitsMu sync.Mutex // fragments are fetched concurrently
}

func (f *fetcher) wait(key uint64) time.Time {
	f.waitsMu.Lock()
	defer f.waitsMu.Unlock()
	return f.waits[key]
}

func (f *fetcher) setWait(key uint64, deadline time.Time) {
	f.waitsMu.Lock()
	defer f.waitsMu.Unlock()
	if f.waits == nil {
		f.waits = map[uint64]time.Time{}
	}
	f.waits[key] = deadline
}

// ErrOffOrigin matches the refusal of a URL, or a redirect, outside the
// overview feed's authority and Config.AllowHosts.
var ErrOffOrigin = origin.ErrOffOrigin

// check refuses, permanently, a URL the client must not request.
func (f *fetcher) check(u string) error {
	u = withoutFragment(u)
	if f.maxURL > 0 && len(u) > f.maxURL {
		return retry.Permanent(fmt.Errorf("%w: %s is longer than %d bytes", ErrURLTooLong, shorten(u), f.maxURL))
	}
	if err := f.origin.Check(u); err != nil {
		return fmt.Errorf("GET %s: %w", shorten(u), err)
	}
	return nil
}

// open GETs url until a 200 arrives and returns it (the caller closes the
// body). Failures retry.Retryable accepts are tried again after
// policy.Delay; a 202 is waited on (Retry-After honoured, capped by the
// policy) until a deadline maxWait after the first 202 (SD-CLI-5), which
// bounds the retries of other failures in between as well, and every
// later open of the same URL in the run (a body that broke off after the
// 202s is retried within the same deadline). ErrNotReady
// is permanent: callers do not start the wait again.
func (f *fetcher) open(ctx context.Context, url, accept string) (*http.Response, error) {
	if err := f.check(url); err != nil {
		return nil, err
	}
	url = withoutFragment(url)
	key := pageKey(url)
	var (
		resp     *http.Response
		deadline = f.wait(key) // the first 202's plus maxWait; zero before it
		waited   int
	)
	_, err := retry.Do(ctx, f.policy, func() (bool, error) {
		var err error
		resp, err = f.do(ctx, url, accept)
		switch {
		case err != nil:
			return retry.Classify(err)
		case resp.StatusCode == http.StatusOK:
			return false, nil
		case resp.StatusCode == http.StatusAccepted:
			if deadline.IsZero() {
				deadline = time.Now().Add(f.maxWait)
				f.setWait(key, deadline)
			}
			wait := retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
			drain(resp)
			waited++
			if wait <= 0 {
				wait = retry.Backoff(waited, 200*time.Millisecond, 5*time.Second)
			}
			return true, retry.Pending(errAccepted, wait)
		}
		se := &StatusError{URL: redact.String(url), Code: resp.StatusCode}
		err = retry.WithRetryAfter(se, retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()))
		drain(resp)
		return retry.Classify(err)
	}, func(_ int, _ error, wait time.Duration) error {
		if !deadline.IsZero() && time.Now().Add(wait).After(deadline) {
			// Waiting would pass the deadline: fail now, not then.
			return retry.Permanent(fmt.Errorf("%w: %s not ready by the --max-wait deadline (%v)", ErrNotReady, url, f.maxWait))
		}
		return nil
	})
	switch {
	case err == nil:
		return resp, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, ErrNotReady):
		return nil, err
	}
	return nil, retry.Strip(err)
}

// errAccepted is a 202 Accepted, waited out by open.
var errAccepted = errors.New("202 Accepted")

// do sends one GET under the watchdog: the response is abandoned with an
// error matching ErrStalled when its headers, or any next byte of its
// body, take longer than limits.Idle, or ErrTooSlow when the body is
// slower than limits.MinRate (a header timeout alone lets a body stall
// forever). The watch ends when the body is closed.
func (f *fetcher) do(ctx context.Context, url, accept string) (*http.Response, error) {
	return f.send(ctx, f.hc, http.MethodGet, url, accept, nil)
}

// post sends one bulk request (bulk.go) under the watchdog, as do a GET:
// body is its text/plain body. A redirect is no bulk answer (bulkHC
// follows none): the fragments are then fetched one by one.
func (f *fetcher) post(ctx context.Context, url, accept, body string) (*http.Response, error) {
	if err := f.check(url); err != nil {
		return nil, err
	}
	return f.send(ctx, f.bulkHC, http.MethodPost, url, accept, strings.NewReader(body))
}

func (f *fetcher) send(ctx context.Context, hc *http.Client, method, url, accept string, body io.Reader) (*http.Response, error) {
	rctx, w := watchdog.Start(ctx, f.limits)
	req, err := http.NewRequestWithContext(rctx, method, url, body)
	if err != nil {
		w.Stop()
		return nil, retry.Permanent(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if f.ua != "" {
		req.Header.Set("User-Agent", f.ua)
	}
	if body != nil {
		req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	}
	acceptGzip(req) // decoded by gunzip, bounded
	resp, err := hc.Do(req)
	if err != nil {
		w.Stop()
		if werr := w.Err(); werr != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("%s %s: %w", method, url, werr)
		}
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	if w != nil {
		resp.Body = &watchedBody{r: w.Body(resp.Body), c: resp.Body, w: w, ctx: ctx}
	}
	gunzip(resp, url)
	return resp, nil
}

// watchedBody reads a body through its Watch and reports the Watch's
// reason, not the bare "context canceled", when the Watch cut it off.
type watchedBody struct {
	r   io.Reader
	c   io.Closer
	w   *watchdog.Watch
	ctx context.Context // the caller's: its end is not the Watch's doing
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && b.ctx.Err() == nil {
		if werr := b.w.Err(); werr != nil {
			err = werr
		}
	}
	return n, err
}

func (b *watchedBody) Close() error {
	err := b.c.Close()
	b.w.Stop()
	return err
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// get fetches url whole (at most max bytes), retrying a body cut off in
// transit like any other retryable failure. It returns the body, the
// response's Content-Type and the final URL (after redirects), which is
// the base for relative references.
func (f *fetcher) get(ctx context.Context, url, accept string, max int64) ([]byte, string, string, http.Header, error) {
	var (
		body        []byte
		ctype, base string
		hdr         http.Header
	)
	_, err := retry.Do(ctx, f.policy, func() (bool, error) {
		resp, err := f.open(ctx, url, accept)
		if err != nil {
			return false, err // open has retried
		}
		body, err = io.ReadAll(io.LimitReader(resp.Body, max+1))
		resp.Body.Close()
		if err == nil {
			if int64(len(body)) > max {
				return false, fmt.Errorf("%w: %s is longer than %d bytes", ErrTooLarge, url, max)
			}
			ctype, base, hdr = resp.Header.Get("Content-Type"), resp.Request.URL.String(), resp.Header
			return false, nil
		}
		err = fmt.Errorf("GET %s: reading body: %w", url, err)
		// A gzip bomb is the same again; any other cut body is retried.
		return !errors.Is(err, ErrTooLarge), err
	}, nil)
	if err != nil {
		return nil, "", "", nil, err
	}
	return body, ctype, base, hdr, nil
}

// feed fetches and decodes the Atom feed at url.
func (f *fetcher) feed(ctx context.Context, url string) (*atom.Feed, error) {
	feed, _, err := f.feedHeader(ctx, url)
	return feed, err
}

// feedHeader is feed, with the response's header and final URL (for its
// Link header).
func (f *fetcher) feedHeader(ctx context.Context, url string) (*atom.Feed, *feedResponse, error) {
	if f.maxRunFeed > 0 && f.feedBytes >= f.maxRunFeed {
		return nil, nil, fmt.Errorf("%w: %d bytes read before %s (the next run goes on from t)", ErrRunFeedBytes, f.feedBytes, shorten(url))
	}
	max := f.maxFeed
	if max <= 0 {
		max = atom.DefaultMaxBytes
	}
	body, _, final, hdr, err := f.get(ctx, url, sdshare.AtomType+", application/xml;q=0.5, */*;q=0.1", max)
	if err != nil {
		return nil, nil, err
	}
	f.feedBytes += int64(len(body))
	feed, err := atom.DecodeLimit(bytes.NewReader(body), final, max)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", url, err)
	}
	return feed, &feedResponse{header: hdr, url: final}, nil
}

// feedResponse is what a feed's response says beside the feed.
type feedResponse struct {
	header http.Header
	url    string // after redirects
}

// formatFor returns the RDF format a media type names (rdf.FormatFor)
// and the client's preference for it (lower is preferred; SD-CLI-12):
// N-Triples parses fastest and is line-based, then Turtle, then RDF/XML.
func formatFor(mediaType string) (f rdf.Format, rank int, ok bool) {
	f, ok = rdf.FormatFor(mediaType)
	if !ok {
		return 0, 0, false
	}
	switch f {
	case rdf.NTriples:
		return f, 0, true
	case rdf.Turtle:
		return f, 1, true
	}
	return f, 2, true
}

const unranked = 3

// acceptHeader is the Accept header of RDF requests: the link's own type
// first, then the others the client reads.
func acceptHeader(linkType string) string {
	var b strings.Builder
	if linkType != "" {
		b.WriteString(linkType)
		b.WriteString(", ")
	}
	b.WriteString("application/n-triples;q=0.9, text/plain;q=0.8, text/turtle;q=0.7, application/rdf+xml;q=0.6")
	return b.String()
}

// pickLink chooses among links the one in the most preferred readable
// format. Links without a type, or with one the client cannot read, are
// taken only when nothing else is offered (their format is then learnt
// from the response).
func pickLink(links []atom.Link) (atom.Link, bool) {
	best, bestRank, found := atom.Link{}, 1<<30, false
	for _, l := range links {
		if l.Href == "" {
			continue
		}
		rank := unranked
		if _, r, ok := formatFor(l.Type); ok {
			rank = r
		} else if l.Type != "" {
			continue // a format we cannot read (e.g. XTM)
		}
		if rank < bestRank {
			best, bestRank, found = l, rank, true
		}
	}
	return best, found
}

// responseFormat decides the format of an RDF response: its Content-Type
// when the client reads it, else the link's type.
func responseFormat(contentType, linkType string) (rdf.Format, error) {
	if f, _, ok := formatFor(contentType); ok {
		return f, nil
	}
	if f, _, ok := formatFor(linkType); ok {
		return f, nil
	}
	return 0, fmt.Errorf("%w: content type %q", rdf.ErrUnsupported, contentType)
}
