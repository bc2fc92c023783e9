package discover

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/internal/origin"
	"github.com/resourcesync-go/resourcesync/internal/redact"
	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/internal/watchdog"
	"github.com/resourcesync-go/resourcesync/rs"
)

// DefaultMaxBytes is the default cap on the size of one downloaded
// document: above the specification's 50 MB, so that a conformant document
// always fits.
const DefaultMaxBytes = 64 << 20

// TempPrefix starts the name of every temporary file a Getter creates.
const TempPrefix = "rs-discover-"

// StatusError is an HTTP status other than 200; it is the same type that
// package fetch returns, so that one errors.As serves both.
type StatusError = fetch.StatusError

// Origin says where a Getter may go (the same as a Fetcher's).
type Origin = fetch.Origin

// Errors matched with errors.Is.
var (
	// ErrStatus is wrapped by every *StatusError.
	ErrStatus = fetch.ErrStatus
	// ErrTooLarge: the body exceeded Getter.MaxBytes. Not retried.
	ErrTooLarge = errors.New("document too large")
	// ErrNotResourceSync: the body is not a ResourceSync document (not
	// XML, not a Sitemap, or no root rs:md capability).
	ErrNotResourceSync = errors.New("not a ResourceSync document")
	// ErrNoCapability is wrapped, with ErrNotResourceSync, when a well-formed
	// Sitemap has no root rs:md capability (RS-GEN-1).
	ErrNoCapability = errors.New("root has no rs:md capability")
	// ErrTruncated: a body without framing ended before its root element
	// was closed. It is retried.
	ErrTruncated = errors.New("body ends before the root element is closed")
	// ErrOffOrigin: a redirect left the Getter's Origin. Not retried.
	ErrOffOrigin = origin.ErrOffOrigin
	// ErrStalled and ErrTooSlow: the response stalled or trickled (see
	// Getter.StallTimeout and MinRate). Retried.
	ErrStalled = watchdog.ErrStalled
	ErrTooSlow = watchdog.ErrTooSlow
)

// DocumentError says why the body at URL is not a ResourceSync document.
// It matches ErrNotResourceSync and unwraps to the decoder's error (a
// *rs.SyntaxError carrying line:col, or ErrNoCapability).
type DocumentError struct {
	URL string
	Err error
}

func (e *DocumentError) Error() string {
	return redact.String(e.URL + ": " + ErrNotResourceSync.Error() + ": " + e.Err.Error())
}

func (e *DocumentError) Unwrap() []error { return []error{ErrNotResourceSync, e.Err} }

// finalURLError carries the URL a request ended at (after redirects),
// credentials included, along with its error (a *StatusError naming it
// redacted).
type finalURLError struct {
	url string
	err error
}

func (e *finalURLError) Error() string { return e.err.Error() }
func (e *finalURLError) Unwrap() error { return e.err }

// Getter downloads ResourceSync documents robustly. The zero value is
// usable (http.DefaultClient and the defaults below). A Getter is safe for
// concurrent use.
type Getter struct {
	Client *http.Client
	// Retries is the number of further attempts after the first
	// (default 4; negative for none).
	Retries int
	// BaseDelay and MaxDelay bound the backoff (defaults 100ms and 10s).
	BaseDelay, MaxDelay time.Duration
	// MaxRetryAfter caps how long a Retry-After header can make us wait
	// (default 60s).
	MaxRetryAfter time.Duration
	// MaxBytes caps the size of a body after decompression (default
	// DefaultMaxBytes; negative for no cap).
	MaxBytes int64
	// TempDir is where bodies are spooled ("" for os.TempDir()).
	TempDir string
	// Limits are passed to the rs.Decoder.
	Limits rs.Limits
	// UserAgent, if set, is sent with every request.
	UserAgent string
	// OnRetry, if set, is called before each retry with the reason.
	OnRetry func(url string, attempt int, err error)
	// StallTimeout abandons (and retries) a response when no byte of it,
	// headers included, arrives for this long; MinRate when its body
	// averages fewer bytes per second over a MinRateWindow (default 30s).
	// Zero: no limit but the context.
	StallTimeout  time.Duration
	MinRate       float64
	MinRateWindow time.Duration
	// Origin, if set, refuses redirects that leave it (ErrOffOrigin, not
	// retried). URLs asked for directly are checked only with CheckURLs:
	// discovery may legitimately be pointed elsewhere by the Source, but
	// once the Source's base is known, a document it names on another
	// authority is refused too (else a third host decides what the lists
	// say).
	Origin    Origin
	CheckURLs bool
	// Accept, when set, is sent as the Accept header: a feed's reader
	// asks for the syntax it parses (LDES servers negotiate).
	Accept string
}

// Open downloads the document at url with a Getter using c and lim; see
// Getter.Open.
func Open(ctx context.Context, c *http.Client, url string, lim rs.Limits) (*Doc, error) {
	g := &Getter{Client: c, Limits: lim}
	return g.Open(ctx, url)
}

// Doc is a downloaded ResourceSync document: its head, then its entries,
// read from a spooled copy of the body. Close it to release the copy.
type Doc struct {
	Requested string // the URL asked for
	URL       string // the final URL, after redirects
	// Head is the decoder's head; root elements found after the first
	// item are merged into it as Next reaches them.
	Head   *rs.Head
	Header http.Header // the response's headers
	// Links are the response's Link headers, hrefs resolved against URL.
	Links    []HeaderLink
	Size     int64 // bytes of the (decompressed) body
	Attempts int   // HTTP requests made, retries included

	dec *rs.Decoder
	b   *body
}

// Next returns the next entry, or io.EOF after the last one.
func (d *Doc) Next() (*rs.Entry, error) { return d.dec.Next() }

// All iterates over the remaining entries; see rs.Decoder.All.
func (d *Doc) All() iter.Seq2[*rs.Entry, error] { return d.dec.All() }

// Decoder returns the underlying decoder (for diagnostics and positions).
func (d *Doc) Decoder() *rs.Decoder { return d.dec }

// Capability returns the document's capability.
func (d *Doc) Capability() rs.Capability { return d.Head.Capability() }

// HeaderLink returns the href of the first Link header with relation rel,
// or "".
func (d *Doc) HeaderLink(rel string) string { return findHeaderLink(d.Links, rel) }

// Close removes the spooled copy. It may be called more than once.
func (d *Doc) Close() error { return d.b.close() }

// Open downloads the document at u, retrying what can succeed on a second
// try (network errors, resets, truncated bodies, 5xx, 408 and 429 with
// Retry-After honoured), and decodes its head. The body is spooled to a
// temporary file first, so a body cut mid-way is retried rather than half
// parsed. Errors: *StatusError (other statuses, or the last retryable one),
// ErrTooLarge, *DocumentError (ErrNotResourceSync), the context's error,
// or the last network error. Every error's message has the credentials of
// its URLs redacted (internal/redact), as OnRetry's.
func (g *Getter) Open(ctx context.Context, u string) (*Doc, error) {
	b, err := g.get(ctx, u, g.maxBytes(), false)
	if err != nil {
		return nil, redact.Error(err)
	}
	d, err := g.decode(b)
	if err != nil {
		b.close()
		return nil, redact.Error(err)
	}
	return d, nil
}

// decode reads b's head. On failure b is left open for the caller.
func (g *Getter) decode(b *body) (*Doc, error) {
	if _, err := b.f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	dec := rs.NewDecoder(b.f)
	dec.Limits = g.Limits
	h, err := dec.Head()
	if err != nil {
		return nil, &DocumentError{URL: b.url, Err: err}
	}
	if h.Capability() == "" {
		return nil, &DocumentError{URL: b.url, Err: ErrNoCapability}
	}
	return &Doc{Requested: b.requested, URL: b.url, Head: h, Header: b.header, Links: b.links,
		Size: b.size, Attempts: b.attempts, dec: dec, b: b}, nil
}

func (g *Getter) client() *http.Client {
	if g.Client == nil {
		return http.DefaultClient
	}
	return g.Client
}

func (g *Getter) policy() retry.Policy {
	return retry.Policy{Retries: g.Retries, BaseDelay: g.BaseDelay, MaxDelay: g.MaxDelay, MaxRetryAfter: g.MaxRetryAfter}
}

func (g *Getter) maxBytes() int64 {
	if g.MaxBytes == 0 {
		return DefaultMaxBytes
	}
	return g.MaxBytes
}

// unlinkEarly removes a spool file as soon as it is created; tests turn it
// off to check that every path closes what it opened.
var unlinkEarly = true

// body is a response body spooled to a temporary file.
type body struct {
	requested string
	url       string
	base      *url.URL
	header    http.Header
	links     []HeaderLink
	size      int64
	attempts  int
	f         *os.File
	name      string // still to remove on close ("" when unlinked at once)
}

func (b *body) close() error {
	if b == nil || b.f == nil {
		return nil
	}
	err := b.f.Close()
	b.f = nil
	if b.name != "" {
		if rerr := os.Remove(b.name); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// head returns up to n bytes from the start of the body.
func (b *body) head(n int64) ([]byte, error) {
	if _, err := b.f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(b.f, n))
}

// get downloads u with retries and spools the body: at most maxBytes of
// it, the rest refused with ErrTooLarge, or cut off when cut is set.
func (g *Getter) get(ctx context.Context, u string, maxBytes int64, cut bool) (*body, error) {
	var b *body
	n, err := retry.Do(ctx, g.policy(), func() (bool, error) {
		var err error
		b, err = g.once(ctx, u, maxBytes, cut)
		return retry.Classify(err)
	}, func(try int, err error, _ time.Duration) error {
		if g.OnRetry != nil {
			g.OnRetry(u, try, redact.Error(retry.Strip(err)))
		}
		return nil
	})
	switch {
	case err == nil:
		b.attempts = n
		return b, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case n > 1:
		return nil, fmt.Errorf("%w (after %d attempts)", retry.Strip(err), n)
	}
	return nil, retry.Strip(err)
}

// once makes one request, watched for stalls, and spools its body.
func (g *Getter) once(ctx context.Context, u string, maxBytes int64, cut bool) (*body, error) {
	rctx, w := watchdog.Start(ctx, watchdog.Limits{Idle: g.StallTimeout, MinRate: g.MinRate, Window: g.MinRateWindow})
	defer w.Stop()
	b, err := g.once1(rctx, u, maxBytes, cut, w)
	if err != nil && ctx.Err() == nil {
		if werr := w.Err(); werr != nil {
			return nil, fmt.Errorf("GET %s: %w", u, werr)
		}
	}
	return b, err
}

// once1 makes one request and spools its body.
func (g *Getter) once1(ctx context.Context, u string, maxBytes int64, cut bool, w *watchdog.Watch) (*body, error) {
	if g.CheckURLs && g.Origin != nil {
		if err := g.Origin.Check(u); err != nil {
			return nil, retry.Permanent(fmt.Errorf("GET %s: %w", u, err))
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, retry.Permanent(fmt.Errorf("GET %s: %w", u, err))
	}
	if g.UserAgent != "" {
		req.Header.Set("User-Agent", g.UserAgent)
	}
	if g.Accept != "" {
		req.Header.Set("Accept", g.Accept)
	}
	c := g.client()
	if g.Origin != nil {
		c = g.Origin.Client(c)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err // *url.Error names the method and URL
	}
	defer resp.Body.Close()
	final := resp.Request.URL.String()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
		// The StatusError names the URL redacted, as messages do; the
		// URL itself, to look beside (Discover), travels unexported.
		se := &finalURLError{url: final, err: &StatusError{URL: redact.String(final), Code: resp.StatusCode}}
		return nil, retry.WithRetryAfter(se, retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()))
	}
	if maxBytes >= 0 && resp.ContentLength > maxBytes && !cut {
		return nil, retry.Permanent(fmt.Errorf("GET %s: %w: Content-Length %d exceeds %d bytes", final, ErrTooLarge, resp.ContentLength, maxBytes))
	}
	f, err := os.CreateTemp(g.TempDir, TempPrefix+"*")
	if err != nil {
		return nil, retry.Permanent(fmt.Errorf("GET %s: spool: %w", final, err))
	}
	b := &body{requested: u, url: final, base: resp.Request.URL, header: resp.Header, f: f, name: f.Name()}
	// Unlinked at once where the system allows it, so that not even a
	// crash leaves the file behind; elsewhere Close removes it.
	if unlinkEarly && os.Remove(f.Name()) == nil {
		b.name = ""
	}
	ok := false
	defer func() {
		if !ok {
			b.close()
		}
	}()
	br := bufio.NewReaderSize(w.Body(resp.Body), 32<<10)
	var src io.Reader = br
	// Sitemaps are often published as .xml.gz without Content-Encoding.
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("GET %s: gzip: %w", final, err)
		}
		defer zr.Close()
		src = zr
	}
	if maxBytes >= 0 {
		if cut {
			src = io.LimitReader(src, maxBytes)
		} else {
			src = io.LimitReader(src, maxBytes+1)
		}
	}
	n, err := io.Copy(f, src)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, retry.Permanent(fmt.Errorf("GET %s: spool: %w", final, err))
		}
		// A reset, or a body shorter than its Content-Length or its
		// chunked framing: retried.
		return nil, fmt.Errorf("GET %s: reading body after %d bytes: %w", final, n, err)
	}
	if maxBytes >= 0 && n > maxBytes {
		return nil, retry.Permanent(fmt.Errorf("GET %s: %w: more than %d bytes", final, ErrTooLarge, maxBytes))
	}
	b.size = n
	// A body delimited only by the connection's close cannot tell a cut
	// from an end: an XML document must then end with its root's end tag.
	if !cut && resp.ContentLength < 0 && len(resp.TransferEncoding) == 0 && looksXML(b) && !endsRoot(b) {
		return nil, fmt.Errorf("GET %s: %w", final, ErrTruncated)
	}
	b.links = ParseLinkHeader(resp.Request.URL, resp.Header.Values("Link"))
	ok = true
	return b, nil
}

// sitemapRoot finds a urlset or sitemapindex start tag, prefixed or not.
var sitemapRoot = regexp.MustCompile(`<([A-Za-z_][\w.-]*:)?(urlset|sitemapindex)[\s>/]`)

// looksXML reports whether the body starts like a Sitemap document: an
// XML declaration or a comment or the root first, and the root early on.
func looksXML(b *body) bool {
	h, err := b.head(4096)
	if err != nil {
		return false
	}
	t := bytes.TrimLeft(bytes.TrimPrefix(h, []byte("\xef\xbb\xbf")), " \t\r\n")
	loc := sitemapRoot.FindIndex(t)
	if loc == nil {
		return false
	}
	return loc[0] == 0 || bytes.HasPrefix(t, []byte("<?xml")) || bytes.HasPrefix(t, []byte("<!--"))
}

// endsRoot reports whether the last bytes of the body close a urlset or
// sitemapindex (comments may follow the end tag; they are short).
func endsRoot(b *body) bool {
	const tail = 4096
	off := max(b.size-tail, 0)
	buf := make([]byte, b.size-off)
	if _, err := b.f.ReadAt(buf, off); err != nil {
		return false
	}
	i := bytes.LastIndex(buf, []byte("</"))
	for i >= 0 {
		rest := string(buf[i+2:])
		if j := strings.IndexByte(rest, '>'); j >= 0 {
			name := strings.TrimSpace(rest[:j])
			if k := strings.IndexByte(name, ':'); k >= 0 {
				name = name[k+1:]
			}
			if name == "urlset" || name == "sitemapindex" {
				return true
			}
		}
		i = bytes.LastIndex(buf[:i], []byte("</"))
	}
	return false
}
