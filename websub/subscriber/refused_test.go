package subscriber

import (
	"errors"
	"fmt"
	"testing"
)

func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&HubError{Status: 400, Body: "hub.callback refused"}, true},
		{fmt.Errorf("subscribe: %w", &HubError{Status: 403}), true},
		{&DeniedError{Reason: "no"}, true},
		{&HubError{Status: 408}, false},
		{&HubError{Status: 429}, false},
		{&HubError{Status: 503}, false},
		{errors.New("connection refused"), false},
		{nil, false},
	} {
		if got := Refused(tc.err); got != tc.want {
			t.Errorf("Refused(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
