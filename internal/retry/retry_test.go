package retry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

type statusErr int

func (s statusErr) Error() string   { return fmt.Sprintf("status %d", int(s)) }
func (s statusErr) StatusCode() int { return int(s) }

type finalErr struct{}

func (finalErr) Error() string   { return "final" }
func (finalErr) Permanent() bool { return true }

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-3", 0},
		{" 120 ", 2 * time.Minute},
		{"1.5", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"Fri, 02 Jan 2026 03:05:05 GMT", time.Minute},
		{"Friday, 02-Jan-26 03:05:05 GMT", time.Minute}, // RFC 850, obsolete but allowed
		{"Fri Jan  2 03:05:05 2026", time.Minute},       // asctime
		{"99999999999999999999", 0},                     // overflows: malformed
		{"9999999999", 365 * 24 * time.Hour},            // capped
	} {
		if got := ParseRetryAfter(tc.v, now); got != tc.want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestRetryable(t *testing.T) {
	base := errors.New("connection reset")
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"network", base, true},
		{"wrapped network", fmt.Errorf("GET x: %w", base), true},
		{"canceled", fmt.Errorf("x: %w", context.Canceled), false},
		{"deadline (one attempt's own)", context.DeadlineExceeded, true},
		{"permanent", Permanent(base), false},
		{"wrapped permanent", fmt.Errorf("x: %w", Permanent(base)), false},
		{"Permanent() method", fmt.Errorf("x: %w", finalErr{}), false},
		{"500", statusErr(500), true},
		{"503 with Retry-After", WithRetryAfter(statusErr(503), time.Second), true},
		{"501", statusErr(501), false},
		{"505", statusErr(505), false},
		{"404", statusErr(404), false},
		{"408", statusErr(408), true},
		{"425", statusErr(425), true},
		{"429", statusErr(429), true},
		{"403", fmt.Errorf("x: %w", statusErr(403)), false},
		{"unknown authority", &url.Error{Op: "Get", URL: "https://h/", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}, false},
		{"wrong host name", fmt.Errorf("x: %w", x509.HostnameError{Host: "h"}), false},
		{"expired", x509.CertificateInvalidError{Reason: x509.Expired}, false},
	} {
		if got := Retryable(tc.err); got != tc.want {
			t.Errorf("%s: Retryable = %v, want %v", tc.name, got, tc.want)
		}
	}
	if e := Permanent(base); !errors.Is(e, base) || Strip(e) != base {
		t.Error("Permanent hides the error it marks")
	}
	if e := WithRetryAfter(Permanent(base), time.Second); Strip(e) != base || RetryAfter(e) != time.Second {
		t.Error("Strip or RetryAfter wrong")
	}
	if WithRetryAfter(base, 0) != base || Permanent(nil) != nil {
		t.Error("markers on nothing")
	}
}

func TestPolicyDelay(t *testing.T) {
	p := Policy{BaseDelay: 10 * time.Millisecond, MaxDelay: 80 * time.Millisecond, MaxRetryAfter: time.Second}
	for n := 1; n <= 8; n++ {
		ceil := min(10*time.Millisecond<<(n-1), 80*time.Millisecond)
		for range 200 {
			if d := p.Delay(n, errors.New("x")); d <= 0 || d > ceil {
				t.Fatalf("Delay(%d) = %v, want in (0, %v]", n, d, ceil)
			}
		}
	}
	if d := p.Delay(1, WithRetryAfter(errors.New("x"), 500*time.Millisecond)); d != 500*time.Millisecond {
		t.Errorf("Retry-After 500ms: %v", d)
	}
	if d := p.Delay(1, fmt.Errorf("w: %w", WithRetryAfter(errors.New("x"), time.Hour))); d != time.Second {
		t.Errorf("Retry-After 1h not capped at MaxRetryAfter: %v", d)
	}
	if d := (Policy{}).Delay(1, WithRetryAfter(errors.New("x"), time.Hour)); d != DefaultMaxRetryAfter {
		t.Errorf("default cap: %v", d)
	}
	for _, tc := range []struct{ retries, want int }{{0, DefaultRetries + 1}, {-1, 1}, {2, 3}} {
		if got := (Policy{Retries: tc.retries}).Attempts(); got != tc.want {
			t.Errorf("Retries %d: Attempts = %d, want %d", tc.retries, got, tc.want)
		}
	}
}

func TestBackoffAndJitter(t *testing.T) {
	if got := Backoff(1, time.Second, time.Minute); got != time.Second {
		t.Errorf("Backoff(1) = %v", got)
	}
	if got := Backoff(4, time.Second, time.Minute); got != 8*time.Second {
		t.Errorf("Backoff(4) = %v", got)
	}
	for _, n := range []int{7, 40, 63, 64, 1000} {
		if got := Backoff(n, time.Second, time.Minute); got != time.Minute {
			t.Errorf("Backoff(%d) = %v, want the cap", n, got)
		}
	}
	for range 500 {
		if d := HalfJitter(time.Second); d < 500*time.Millisecond || d > time.Second {
			t.Fatalf("HalfJitter(1s) = %v", d)
		}
		if d := FullJitter(time.Second); d <= 0 || d > time.Second {
			t.Fatalf("FullJitter(1s) = %v", d)
		}
	}
}

func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep on a canceled context: %v", err)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Error(err)
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "120", "-1", "Fri, 02 Jan 2026 03:05:05 GMT", "9999999999999", "1e3", " 7 "} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		if d := ParseRetryAfter(v, now); d < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v < 0", v, d)
		}
	})
}
