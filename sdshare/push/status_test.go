package push

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/httperr"
)

// TestPostStatusError: a receiver's 503 is the project's one status
// error, with the method, the URL posted to and the body's start.
func TestPostStatusError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	s := &Sender{URL: srv.URL + "/push", Client: srv.Client()}
	err := s.post(context.Background(), Item{Resource: "http://example.org/r"})
	var se *httperr.StatusError
	if !errors.As(err, &se) || se.Code != 503 || se.Method != http.MethodPost || !strings.HasPrefix(se.URL, srv.URL+"/push?") || se.Body != "busy" {
		t.Fatalf("err = %v, want a *httperr.StatusError POST 503", err)
	}
}
