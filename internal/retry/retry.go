package retry

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/httpclient"
)

// Defaults of a zero Policy.
const (
	DefaultRetries       = 4
	DefaultBaseDelay     = 100 * time.Millisecond
	DefaultMaxDelay      = 10 * time.Second
	DefaultMaxRetryAfter = 60 * time.Second
)

// Policy says how often and after how long a failed request is tried
// again. The zero value uses the defaults above.
type Policy struct {
	// Retries is the number of further attempts after the first
	// (0: DefaultRetries; negative: none).
	Retries int
	// BaseDelay is the backoff before the first retry, doubled for each
	// further one up to MaxDelay.
	BaseDelay, MaxDelay time.Duration
	// MaxRetryAfter caps the wait a Retry-After header can ask for.
	MaxRetryAfter time.Duration
}

// Attempts returns how many attempts the policy allows in all.
func (p Policy) Attempts() int {
	switch {
	case p.Retries == 0:
		return DefaultRetries + 1
	case p.Retries < 0:
		return 1
	}
	return p.Retries + 1
}

// Delay returns the wait before retry n (n ≥ 1) after err: what err's
// Retry-After asked for (capped by MaxRetryAfter) when it did, else a
// full-jitter backoff (uniform in (0, min(BaseDelay·2ⁿ⁻¹, MaxDelay)]), so
// that clients that failed together do not retry together.
func (p Policy) Delay(n int, err error) time.Duration {
	if w := RetryAfter(err); w > 0 {
		return min(w, p.maxRetryAfter())
	}
	base, maxd := p.BaseDelay, p.MaxDelay
	if base <= 0 {
		base = DefaultBaseDelay
	}
	if maxd <= 0 {
		maxd = DefaultMaxDelay
	}
	return FullJitter(Backoff(n, base, maxd))
}

// Backoff returns base·2ⁿ⁻¹ capped at maxd (n ≥ 1).
func Backoff(n int, base, maxd time.Duration) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 62 {
		return maxd
	}
	d := base << (n - 1)
	if d > maxd || d <= 0 || d>>(n-1) != base {
		return maxd
	}
	return d
}

// FullJitter returns a delay uniform in (0, d].
func FullJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

// HalfJitter returns a delay uniform in [d/2, d]: for schedules whose
// steps are meant as a minimum order of magnitude.
func HalfJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// ParseRetryAfter reads a Retry-After value, delay-seconds or an HTTP-date,
// as a duration from now; 0 when absent, malformed or in the past.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > int64(365*24*time.Hour/time.Second) {
			n = int64(365 * 24 * time.Hour / time.Second)
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// RetryableStatus reports whether a response with this status may succeed
// when the request is repeated: 408, 425, 429 and 5xx (but 501 and 505,
// which say the server will never do it).
func RetryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
		return false
	}
	return code >= 500 && code <= 599
}

// afterError carries the wait a response's Retry-After asked for.
type afterError struct {
	err  error
	wait time.Duration
}

func (e *afterError) Error() string { return e.err.Error() }
func (e *afterError) Unwrap() error { return e.err }

// WithRetryAfter attaches the wait a Retry-After header asked for to err
// (err itself when wait ≤ 0); Delay honours it.
func WithRetryAfter(err error, wait time.Duration) error {
	if err == nil || wait <= 0 {
		return err
	}
	return &afterError{err, wait}
}

// RetryAfter returns the wait attached to err by WithRetryAfter, or 0.
func RetryAfter(err error) time.Duration {
	var ae *afterError
	if errors.As(err, &ae) {
		return ae.wait
	}
	return 0
}

// permanentError marks a failure no retry can fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string   { return e.err.Error() }
func (e *permanentError) Unwrap() error   { return e.err }
func (e *permanentError) Permanent() bool { return true }

// Permanent marks err as one no retry can fix (err unchanged when nil).
// Errors.Is/As still see err through it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// Retryable reports whether another attempt after err may succeed:
// not for a cancellation, not for a server certificate that fails
// verification, not for an error in whose chain some error
// has a Permanent() bool method returning true (Permanent, and errors of
// other packages that know they are final, such as a redirect refused by
// policy), not for a StatusCode() int that RetryableStatus refuses; yes
// otherwise (network errors, resets, truncated bodies).
func Retryable(err error) bool {
	// A deadline is not final: it may be one attempt's own; callers
	// check their context's end themselves.
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var p interface{ Permanent() bool }
	if errors.As(err, &p) && p.Permanent() {
		return false
	}
	// A certificate that does not verify will not verify next time either
	// (whichever client made the request).
	if httpclient.IsCertError(err) {
		return false
	}
	var s interface{ StatusCode() int }
	if errors.As(err, &s) {
		return RetryableStatus(s.StatusCode())
	}
	return true
}

// Strip removes the markers Permanent and WithRetryAfter put around err,
// for reporting.
func Strip(err error) error {
	for {
		switch e := err.(type) {
		case *permanentError:
			err = e.err
		case *afterError:
			err = e.err
		default:
			return err
		}
	}
}

// Sleep waits d or until ctx ends, and returns ctx's error then.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Forever, as Policy.Retries, retries without a limit (until fn says
// not to, or the context ends).
const Forever = math.MaxInt - 1

// pendingError carries a "not yet" answer's wait (see Pending).
type pendingError struct {
	err  error
	wait time.Duration
}

func (e *pendingError) Error() string { return e.err.Error() }
func (e *pendingError) Unwrap() error { return e.err }

// Pending marks err as a "not yet" answer (such as 202 Accepted) that Do
// waits out for wait (capped by MaxRetryAfter) without counting it as a
// failed attempt.
func Pending(err error, wait time.Duration) error {
	if err == nil {
		return nil
	}
	return &pendingError{err, wait}
}

// PermanentCause returns the error that Permanent marked somewhere in
// err's chain, unmarked, and true; or nil and false when Permanent marked
// none (errors merely refused by Retryable included). It serves callers
// that tell "no retry helps" from "nothing else helps either".
func PermanentCause(err error) (error, bool) {
	var pe *permanentError
	if errors.As(err, &pe) {
		return pe.err, true
	}
	return nil, false
}

// Do is the one retry loop of the project's clients (after rclone's
// pacer.Call). It calls fn until fn returns a nil error, fn says not to
// retry (retry false; Classify says it by Retryable), the policy's
// attempts are spent, or ctx ends. Before each wait it calls onRetry, if
// set, with the number of failures counted so far (the retry to come: 1
// for the first; Pending ones not counted), fn's error and the wait (p.Delay: Retry-After honoured, else backoff with jitter);
// an error from onRetry ends Do with that error. Errors marked Pending
// are waited out without counting.
//
// Do returns the number of calls of fn and nil, or fn's last error as fn
// returned it (markers kept, so that callers can tell; Strip them for
// reporting), or ctx's error when ctx ended after a failure.
func Do(ctx context.Context, p Policy, fn func() (retry bool, err error), onRetry func(n int, err error, wait time.Duration) error) (int, error) {
	calls, n := 0, 0
	for {
		calls++
		again, err := fn()
		if err == nil {
			return calls, nil
		}
		if ctx.Err() != nil {
			return calls, ctx.Err()
		}
		if !again {
			return calls, err
		}
		var wait time.Duration
		if pe := (*pendingError)(nil); errors.As(err, &pe) {
			wait = min(pe.wait, p.maxRetryAfter())
		} else {
			n++
			if n >= p.Attempts() {
				return calls, err
			}
			wait = p.Delay(n, err)
		}
		if onRetry != nil {
			if err := onRetry(n, err, wait); err != nil {
				return calls, err
			}
		}
		if err := Sleep(ctx, wait); err != nil {
			return calls, err
		}
	}
}

// Classify is fn's answer for err by Retryable: (Retryable(err), err).
func Classify(err error) (bool, error) { return Retryable(err), err }

func (p Policy) maxRetryAfter() time.Duration {
	if p.MaxRetryAfter <= 0 {
		return DefaultMaxRetryAfter
	}
	return p.MaxRetryAfter
}
