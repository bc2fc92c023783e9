package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/resourcesync-go/resourcesync/httperr"
	"github.com/resourcesync-go/resourcesync/internal/origin"
	"github.com/resourcesync-go/resourcesync/internal/redact"
	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/internal/watchdog"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/storage"
	"github.com/resourcesync-go/resourcesync/storage/local"
)

// TempPrefix starts the name of every temporary file a Fetcher creates:
// the storage/local Target's, so that either's leftovers are cleaned by
// CleanTemp and never listed.
const TempPrefix = local.TempPrefix

// Errors matched with errors.Is.
var (
	ErrHashMismatch   = errors.New("hash mismatch")
	ErrLengthMismatch = errors.New("length mismatch")
	ErrStatus         = httperr.ErrStatus
	ErrNoLocation     = errors.New("no location to fetch")
	// ErrStalled: no byte (headers included) for StallTimeout; ErrTooSlow:
	// less than MinRate bytes/s over a MinRateWindow. Both are retried.
	ErrStalled = watchdog.ErrStalled
	ErrTooSlow = watchdog.ErrTooSlow
	// ErrOffOrigin: a location or a redirect outside the Fetcher's Origin
	// policy. Not retried; the next location is tried.
	ErrOffOrigin = origin.ErrOffOrigin
	// ErrExists: Request.NoReplace and something is at the path.
	ErrExists = errors.New("something is at the path already")
)

// StatusError is an HTTP status other than 200: the project's one
// status error (package httperr), which wraps ErrStatus.
type StatusError = httperr.StatusError

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
	// NoReplace installs only where nothing is at Path yet; otherwise
	// nothing is installed and the error wraps ErrExists. On Linux the
	// rename itself refuses (renameat2 RENAME_NOREPLACE): no window
	// between a check and the rename.
	NoReplace bool
	// Parents, when set, keeps the directory of Path open for the next
	// request in the same directory (see Parents); requests sharing it
	// must not run concurrently.
	Parents *Parents
	// Target, when set, is where the bytes go instead of Path: they are
	// streamed into Target.Create(Key) while they are verified, with the
	// size and the md5 and sha-256 the Source gave (so that the storage
	// checks them too), and committed only when they matched; Path, Dir
	// and Parents are not used. ModTime, NoSync and NoReplace become the
	// PutOptions'; IfVersion commits only over that version of the
	// object (storage.ErrExists otherwise, wrapped with ErrExists).
	Target    storage.Target
	Key       string
	IfVersion string
	// ContentType, with Target, is stored with the object (the Source's
	// md type); "" stores none.
	ContentType string
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
	// Info is the object committed, with Request.Target.
	Info storage.Info
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
	// MinRate abandons (and retries) a response whose body averages fewer
	// bytes per second over a MinRateWindow (default 30s); 0: no limit.
	MinRate       float64
	MinRateWindow time.Duration
	// Origin, if set, refuses locations and redirects outside it
	// (ErrOffOrigin).
	Origin Origin
	// OnRetry, if set, is called before each retry with the reason.
	OnRetry func(url string, attempt int, err error)

	mu       sync.Mutex
	limiters map[string]*rate.Limiter
}

// Origin says where a client may go. Check refuses a URL outside it with
// an error matching ErrOffOrigin (not retried); Client returns c
// (http.DefaultClient when nil) or a copy of it whose redirects outside
// are refused likewise. The destination's sync uses one for the Source's
// authority and the hosts allowed (--allow-host).
type Origin interface {
	Check(url string) error
	Client(c *http.Client) *http.Client
}

// check is Origin's Check, nil when no Origin is set.
func (f *Fetcher) check(u string) error {
	if f.Origin == nil {
		return nil
	}
	return f.Origin.Check(u)
}

// client is the client for a request: Origin's, when set.
func (f *Fetcher) client() *http.Client {
	if f.Origin == nil {
		if f.Client == nil {
			return http.DefaultClient
		}
		return f.Client
	}
	return f.Origin.Client(f.Client)
}

func (f *Fetcher) policy() retry.Policy {
	return retry.Policy{Retries: f.Retries, BaseDelay: f.BaseDelay, MaxDelay: f.MaxDelay, MaxRetryAfter: f.MaxRetryAfter}
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
// tell why. Nothing is installed unless length and hashes matched. The
// error's message (and OnRetry's) has the credentials of its URLs
// redacted (internal/redact: user:password@, ?token=), so that a program
// logging it leaks nothing; errors.Is and errors.As see through.
func (f *Fetcher) Fetch(ctx context.Context, req Request) (Result, error) {
	res, err := f.fetch(ctx, req)
	return res, redact.Error(err)
}

func (f *Fetcher) fetch(ctx context.Context, req Request) (Result, error) {
	if len(req.URLs) == 0 {
		return Result{}, ErrNoLocation
	}
	pol := f.policy()
	var last error
	attempts := 0
	for _, u := range req.URLs {
		// A duplicate location on another authority is never requested.
		if err := f.check(u); err != nil {
			last = err
			continue
		}
		var res Result
		n, err := retry.Do(ctx, pol, func() (bool, error) {
			var err error
			res, err = f.once(ctx, u, req)
			return retry.Classify(err)
		}, func(try int, err error, _ time.Duration) error {
			if f.OnRetry != nil {
				f.OnRetry(u, try, redact.Error(retry.Strip(err)))
			}
			return nil
		})
		attempts += n
		if err == nil {
			res.Attempts = attempts
			return res, nil
		}
		if ctx.Err() != nil {
			return Result{Attempts: attempts}, ctx.Err()
		}
		if cause, ok := retry.PermanentCause(err); ok {
			// The destination cannot be written: no location helps.
			return Result{Attempts: attempts}, cause
		}
		// 404, 403, 410, a redirect off origin, retries spent…: try the
		// next location.
		last = err
	}
	return Result{Attempts: attempts}, fmt.Errorf("fetch %s: %w", req.URLs[0], retry.Strip(last))
}

// ParseRetryAfter reads a Retry-After value: seconds or an HTTP date
// (internal/retry.ParseRetryAfter).
func ParseRetryAfter(v string, now time.Time) time.Duration { return retry.ParseRetryAfter(v, now) }

func (f *Fetcher) once(ctx context.Context, u string, req Request) (Result, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return Result{}, retry.Permanent(fmt.Errorf("bad URL %q: %w", u, err))
	}
	if l := f.limiter(pu.Host); l != nil {
		if err := l.Wait(ctx); err != nil {
			return Result{}, err
		}
	}
	rctx, w := watchdog.Start(ctx, watchdog.Limits{Idle: f.StallTimeout, MinRate: f.MinRate, Window: f.MinRateWindow})
	defer w.Stop()
	res, err := f.get(rctx, u, req, w)
	if err != nil && ctx.Err() == nil {
		if werr := w.Err(); werr != nil {
			return Result{}, fmt.Errorf("GET %s: %w", u, werr)
		}
	}
	return res, err
}

func (f *Fetcher) get(ctx context.Context, u string, req Request, w *watchdog.Watch) (Result, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Result{}, err
	}
	// Verify the bytes as the Source describes them: no transparent
	// decompression by the transport.
	hreq.Header.Set("Accept-Encoding", "identity")
	resp, err := f.client().Do(hreq)
	if err != nil {
		return Result{}, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		se := &StatusError{URL: redact.String(u), Code: resp.StatusCode}
		return Result{}, retry.WithRetryAfter(se, retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()))
	}
	if req.HasLength && resp.ContentLength >= 0 && resp.ContentLength != req.Length {
		return Result{}, fmt.Errorf("GET %s: %w: Content-Length %d, expected %d", u, ErrLengthMismatch, resp.ContentLength, req.Length)
	}
	res, err := InstallContext(ctx, w.Body(resp.Body), req)
	if err != nil {
		return Result{}, fmt.Errorf("GET %s: %w", u, err)
	}
	res.URL = u
	return res, nil
}
