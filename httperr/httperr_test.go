package httperr

import (
	"errors"
	"fmt"
	"testing"
)

func TestStatusError(t *testing.T) {
	for _, tc := range []struct {
		e    *StatusError
		want string
	}{
		{&StatusError{URL: "http://x/a", Code: 404}, "GET http://x/a: Not Found (404)"},
		{&StatusError{Method: "POST", URL: "http://x/r", Code: 503, Body: "busy"}, "POST http://x/r: Service Unavailable (503): busy"},
		{&StatusError{URL: "http://x/a", Code: 599}, "GET http://x/a: HTTP 599"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
		err := fmt.Errorf("context: %w", tc.e)
		var se *StatusError
		if !errors.As(err, &se) || se.StatusCode() != tc.e.Code || !errors.Is(err, ErrStatus) {
			t.Errorf("%v: errors.As/Is do not see the status", err)
		}
	}
}
