package httperr

import (
	"errors"
	"net/http"
	"strconv"
)

// ErrStatus is wrapped by every *StatusError: errors.Is(err, ErrStatus)
// tells a status from a network or decoding failure.
var ErrStatus = errors.New("unexpected HTTP status")

// StatusError is an HTTP response other than the one a client expected.
type StatusError struct {
	Method string // the request's method; "" reads as GET
	URL    string // the URL requested (after redirects, where the client knows it)
	Code   int    // the response's status code
	// Body is the start of the response body, trimmed, where the client
	// keeps it for the log; usually "".
	Body string
}

func (e *StatusError) Error() string {
	m := e.Method
	if m == "" {
		m = http.MethodGet
	}
	s := m + " " + e.URL + ": " + Text(e.Code)
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

// Unwrap returns ErrStatus.
func (e *StatusError) Unwrap() error { return ErrStatus }

// StatusCode returns Code (the project's retry policy classifies errors
// by this method).
func (e *StatusError) StatusCode() int { return e.Code }

// Text names a status as the project's messages do: "Not Found (404)",
// or "HTTP 599" for a code without a name.
func Text(code int) string {
	if t := http.StatusText(code); t != "" {
		return t + " (" + strconv.Itoa(code) + ")"
	}
	return "HTTP " + strconv.Itoa(code)
}
