package sparql

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/resourcesync-go/resourcesync/httperr"
)

// TestEndpointStatusError: an EndpointError wraps the project's one
// status error.
func TestEndpointStatusError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such thing", http.StatusBadRequest)
	}))
	defer srv.Close()
	s := New(Endpoints{Update: srv.URL + "/sparql", Query: srv.URL + "/sparql"}, srv.Client())
	_, err := s.Graphs(context.Background())
	var ee *EndpointError
	var se *httperr.StatusError
	if !errors.As(err, &ee) || !errors.Is(err, ErrEndpoint) || !errors.As(err, &se) ||
		se.Code != 400 || se.URL != srv.URL+"/sparql" || se.Body != "no such thing" {
		t.Fatalf("err = %v, want an EndpointError wrapping a *httperr.StatusError 400", err)
	}
}
