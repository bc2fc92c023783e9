package sparql

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/resourcesync-go/resourcesync/httperr"
	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// Errors; match with errors.Is.
var (
	// ErrEndpoint: the endpoint answered with a status other than 2xx
	// (the error is an *EndpointError).
	ErrEndpoint = errors.New("sparql: endpoint error")
	// ErrResponse: a 2xx answer that is not what was asked for (wrong
	// media type, malformed N-Triples or JSON).
	ErrResponse = errors.New("sparql: malformed response")
	// ErrTooDeep: a resource's blank-node closure is nested deeper than
	// MaxDepth.
	ErrTooDeep = errors.New("sparql: blank-node closure deeper than MaxDepth")
	// ErrInvalidTerm: a triple cannot be written in SPARQL (a literal
	// subject, an IRI with characters IRIs may not hold, …). It matches
	// graphstore.ErrInvalid too.
	ErrInvalidTerm = fmt.Errorf("%w: a term SPARQL cannot carry", graphstore.ErrInvalid)
)

// EndpointError is a non-2xx answer.
type EndpointError struct {
	Op       string // what the request was for, e.g. "apply fragment"
	Endpoint string // the URL requested, without query string
	Status   int
	Text     string // the server's error text, trimmed

	method string // the request's
}

func (e *EndpointError) Error() string {
	return fmt.Sprintf("sparql: %s: %s answered %d %s: %s", e.Op, e.Endpoint, e.Status, http.StatusText(e.Status), e.Text)
}

// Unwrap returns ErrEndpoint and the project's one status error
// (*httperr.StatusError), so that errors.As finds the status as it does
// for every client here.
func (e *EndpointError) Unwrap() []error {
	return []error{ErrEndpoint, &httperr.StatusError{Method: e.method, URL: e.Endpoint, Code: e.Status, Body: e.Text}}
}

// StatusCode lets retry.Retryable judge the status.
func (e *EndpointError) StatusCode() int { return e.Status }

// virtuosoState finds the SQL state of a Virtuoso error text
// ("Virtuoso 37000 Error SP030: …").
var virtuosoState = regexp.MustCompile(`^Virtuoso ([0-9A-Z]{5}) Error`)

// Permanent reports errors a repeat cannot fix: Virtuoso's SQL states of
// class 22 (bad data), 37 and 42 (syntax, access). Deadlocks (40001),
// timeouts (S1T00) and everything else stay retryable by status.
func (e *EndpointError) Permanent() bool {
	m := virtuosoState.FindStringSubmatch(e.Text)
	if m == nil {
		return false
	}
	switch m[1][:2] {
	case "22", "37", "42":
		return true
	}
	return false
}

var (
	tags   = regexp.MustCompile(`(?s)<script.*?</script>|<style.*?</style>|<[^>]*>`)
	spaces = regexp.MustCompile(`\s+`)
)

// maxErrorText bounds the error text kept from a response.
const maxErrorText = 500

// trimText makes an error body fit in an error message: tags stripped,
// entities decoded, whitespace collapsed, Virtuoso's echo of the query
// (which can be megabytes) cut off, at most maxErrorText bytes.
func trimText(b []byte) string {
	s := string(b)
	if i := strings.Index(s, "\nSPARQL query:"); i >= 0 {
		s = s[:i]
	}
	if strings.Contains(s, "<") && strings.Contains(s, ">") {
		s = html.UnescapeString(tags.ReplaceAllString(s, " "))
	}
	s = strings.TrimSpace(spaces.ReplaceAllString(s, " "))
	if len(s) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…"
	}
	if s == "" {
		s = "(no error text)"
	}
	return s
}

// request is one HTTP exchange, repeatable.
type request struct {
	op, method, url string
	contentType     string
	accept          string
	body            func() (io.Reader, int64, error) // nil: no body
	idempotent      bool
}

// refused reports a failure before the request reached the server.
func refused(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &op) && op.Op == "dial")
}

// do sends r, retrying per the store's policy, and returns a 2xx response
// whose body the caller closes.
func (s *Store) do(ctx context.Context, r request) (*http.Response, error) {
	var resp *http.Response
	var last error
	waiting := false // the last failure is being waited out
	_, err := retry.Do(ctx, s.policy, func() (bool, error) {
		waiting = false
		var err error
		resp, err = s.once(ctx, r)
		last = err
		// An update that may have reached the server is not sent twice.
		return retry.Retryable(err) && (r.idempotent || refused(err)), err
	}, func(int, error, time.Duration) error {
		waiting = true
		return nil
	})
	switch {
	case err == nil:
		return resp, nil
	case ctx.Err() != nil && waiting:
		return nil, fmt.Errorf("sparql: %s: %w (after %w)", r.op, ctx.Err(), retry.Strip(last))
	case ctx.Err() != nil:
		return nil, fmt.Errorf("sparql: %s: %w", r.op, ctx.Err())
	}
	return nil, retry.Strip(err)
}

func (s *Store) once(ctx context.Context, r request) (*http.Response, error) {
	var body io.Reader
	var n int64
	if r.body != nil {
		var err error
		if body, n, err = r.body(); err != nil {
			return nil, retry.Permanent(fmt.Errorf("sparql: %s: %w", r.op, err))
		}
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		return nil, retry.Permanent(fmt.Errorf("sparql: %s: %w", r.op, err))
	}
	if body != nil {
		// Never chunked: Virtuoso ignores chunked bodies.
		req.ContentLength = n
		if n == 0 {
			req.Body = http.NoBody
		}
		req.Header.Set("Content-Type", r.contentType)
	}
	if r.accept != "" {
		req.Header.Set("Accept", r.accept)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sparql: %s: %s: %w", r.op, endpointName(r.url), err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &EndpointError{Op: r.op, Endpoint: endpointName(r.url), Status: resp.StatusCode, Text: trimText(text), method: r.method}
	return nil, retry.WithRetryAfter(e, retry.ParseRetryAfter(resp.Header.Get("Retry-After"), nowFunc()))
}

// endpointName is u without its query string (which can hold a whole
// query).
func endpointName(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}

// bytesBody returns a body function for an in-memory body.
func bytesBody(b []byte) func() (io.Reader, int64, error) {
	return func() (io.Reader, int64, error) { return bytes.NewReader(b), int64(len(b)), nil }
}
