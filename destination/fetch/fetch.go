package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/resourcesync-go/resourcesync/rs"
)

// TempPrefix starts the name of every temporary file a Fetcher creates.
const TempPrefix = ".rs-tmp-"

// Errors matched with errors.Is.
var (
	ErrHashMismatch   = errors.New("hash mismatch")
	ErrLengthMismatch = errors.New("length mismatch")
	ErrStatus         = errors.New("unexpected HTTP status")
	ErrNoLocation     = errors.New("no location to fetch")
	ErrStalled        = errors.New("response stalled")
)

// StatusError is an HTTP status other than 200.
type StatusError struct {
	URL  string
	Code int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("GET %s: %s", e.URL, http.StatusText(e.Code)+" ("+strconv.Itoa(e.Code)+")")
}
func (e *StatusError) Unwrap() error { return ErrStatus }

// retryable reports whether a second attempt may succeed.
func (e *StatusError) retryable() bool {
	return e.Code >= 500 || e.Code == http.StatusTooManyRequests || e.Code == http.StatusRequestTimeout
}

// Request describes one resource to fetch.
type Request struct {
	// URLs are the locations to try in order: the resource's loc first,
	// then its duplicates by priority.
	URLs []string
	// Length and Hashes are what the Source says the bytes are; whatever
	// is given is verified. Digests are decoded by rs.DecodeDigests (hex
	// or base64, any spelling of md5, sha-1, sha-256); one that does not
	// decode, or two that differ, fail the request. Other algorithms are
	// not verifiable: they are listed in Result.Unverified.
	Length    int64
	HasLength bool
	Hashes    rs.Hashes
	// Path is where the file is installed; its directory is created.
	Path string
	// Dir, when set, is the destination directory Path is inside: the
	// file is written only through it, never through a symbolic link.
	Dir *Dir
	// ModTime, when not zero, becomes the file's mtime.
	ModTime time.Time
	// NoSync skips the fsync before the rename. A caller that sets it
	// must make the file durable itself (one syncfs over many files)
	// before recording it anywhere as installed.
	NoSync bool
}

// Result tells what was installed.
type Result struct {
	URL      string // the location the bytes came from
	Length   int64
	SHA256   string // hex; computed when offered or when no other hash was
	MD5      string // hex, computed when the request offered md5
	SHA1     string // hex, computed when the request offered sha-1
	Attempts int
	// Unverified lists the offered digests' algorithms that could not be
	// checked (neither md5, sha-1 nor sha-256), as written.
	Unverified []string
}

// Fetcher downloads and installs resources. Its zero value is not usable;
// set at least Client. A Fetcher is safe for concurrent use.
type Fetcher struct {
	Client *http.Client
	// Retries is the number of further attempts per location after the
	// first (default 4).
	Retries int
	// BaseDelay and MaxDelay bound the backoff (defaults 100ms and 10s).
	BaseDelay, MaxDelay time.Duration
	// MaxRetryAfter caps how long a Retry-After header can make us wait
	// (default 60s).
	MaxRetryAfter time.Duration
	// RatePerHost limits requests per second to each host (0: no limit).
	RatePerHost float64
	// StallTimeout abandons (and retries) a response when no bytes of it
	// arrive for this long (0: wait as long as the context allows).
	StallTimeout time.Duration
	// OnRetry, if set, is called before each retry with the reason.
	OnRetry func(url string, attempt int, err error)

	mu       sync.Mutex
	limiters map[string]*rate.Limiter
}

func (f *Fetcher) retries() int {
	if f.Retries == 0 {
		return 4
	}
	if f.Retries < 0 {
		return 0
	}
	return f.Retries
}

func (f *Fetcher) limiter(host string) *rate.Limiter {
	if f.RatePerHost <= 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.limiters == nil {
		f.limiters = map[string]*rate.Limiter{}
	}
	l := f.limiters[host]
	if l == nil {
		burst := int(f.RatePerHost)
		if burst < 1 {
			burst = 1
		}
		l = rate.NewLimiter(rate.Limit(f.RatePerHost), burst)
		f.limiters[host] = l
	}
	return l
}

// Fetch downloads the resource and installs it at req.Path. It returns an
// error only when every location failed every attempt; the error of the
// last attempt is wrapped, so errors.Is(err, ErrHashMismatch) and the like
// tell why. Nothing is installed unless length and hashes matched.
func (f *Fetcher) Fetch(ctx context.Context, req Request) (Result, error) {
	if len(req.URLs) == 0 {
		return Result{}, ErrNoLocation
	}
	var last error
	attempts := 0
	for _, u := range req.URLs {
		for try := 0; try <= f.retries(); try++ {
			if try > 0 {
				if f.OnRetry != nil {
					f.OnRetry(u, try, last)
				}
				if err := sleep(ctx, f.delay(try, last)); err != nil {
					return Result{Attempts: attempts}, err
				}
			}
			attempts++
			res, err := f.once(ctx, u, req)
			if err == nil {
				res.Attempts = attempts
				return res, nil
			}
			last = err
			if ctx.Err() != nil {
				return Result{Attempts: attempts}, ctx.Err()
			}
			var se *StatusError
			if errors.As(err, &se) && !se.retryable() {
				break // 404, 403, 410…: try the next location
			}
			var pe *permanentError
			if errors.As(err, &pe) {
				return Result{Attempts: attempts}, pe.err
			}
		}
	}
	return Result{Attempts: attempts}, fmt.Errorf("fetch %s: %w", req.URLs[0], last)
}

// permanentError is a failure that no retry or other location can fix
// (the destination cannot be written).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// retryAfterError carries the wait a 429 or 503 asked for.
type retryAfterError struct {
	error
	wait time.Duration
}

func (e *retryAfterError) Unwrap() error { return e.error }

func (f *Fetcher) delay(try int, last error) time.Duration {
	base, maxd := f.BaseDelay, f.MaxDelay
	if base == 0 {
		base = 100 * time.Millisecond
	}
	if maxd == 0 {
		maxd = 10 * time.Second
	}
	var ra *retryAfterError
	if errors.As(last, &ra) && ra.wait > 0 {
		capd := f.MaxRetryAfter
		if capd == 0 {
			capd = 60 * time.Second
		}
		return min(ra.wait, capd)
	}
	d := base << (try - 1)
	if d > maxd || d <= 0 {
		d = maxd
	}
	// Full jitter: spread retries of many workers over the whole window.
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ParseRetryAfter reads a Retry-After value: seconds or an HTTP date.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

func (f *Fetcher) once(ctx context.Context, u string, req Request) (Result, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return Result{}, &permanentError{fmt.Errorf("bad URL %q: %w", u, err)}
	}
	if l := f.limiter(pu.Host); l != nil {
		if err := l.Wait(ctx); err != nil {
			return Result{}, err
		}
	}
	rctx := ctx
	var stall *stallTimer
	if f.StallTimeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithCancel(ctx)
		defer cancel()
		stall = &stallTimer{d: f.StallTimeout, t: time.AfterFunc(f.StallTimeout, cancel)}
		defer stall.t.Stop()
	}
	res, err := f.get(rctx, u, req, stall)
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		return Result{}, fmt.Errorf("GET %s: %w: no bytes for %v", u, ErrStalled, f.StallTimeout)
	}
	return res, err
}

// stallTimer cancels a request when it is not reset in time.
type stallTimer struct {
	d time.Duration
	t *time.Timer
}

type stallReader struct {
	r io.Reader
	s *stallTimer
}

func (s stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.s.t.Reset(s.s.d)
	}
	return n, err
}

func (f *Fetcher) get(ctx context.Context, u string, req Request, stall *stallTimer) (Result, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Result{}, err
	}
	// Verify the bytes as the Source describes them: no transparent
	// decompression by the transport.
	hreq.Header.Set("Accept-Encoding", "identity")
	resp, err := f.Client.Do(hreq)
	if err != nil {
		return Result{}, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		se := &StatusError{URL: u, Code: resp.StatusCode}
		if w := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); w > 0 {
			return Result{}, &retryAfterError{error: se, wait: w}
		}
		return Result{}, se
	}
	if req.HasLength && resp.ContentLength >= 0 && resp.ContentLength != req.Length {
		return Result{}, fmt.Errorf("GET %s: %w: Content-Length %d, expected %d", u, ErrLengthMismatch, resp.ContentLength, req.Length)
	}
	var body io.Reader = resp.Body
	if stall != nil {
		stall.t.Reset(stall.d)
		body = stallReader{resp.Body, stall}
	}
	res, err := Install(body, req)
	if err != nil {
		return Result{}, fmt.Errorf("GET %s: %w", u, err)
	}
	res.URL = u
	return res, nil
}
