package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/resourcesync-go/resourcesync/httperr"
	"github.com/resourcesync-go/resourcesync/internal/retry"
)

// TestFetcherStatusError: a 404 is the project's one status error.
func TestFetcherStatusError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	f := &fetcher{hc: srv.Client(), policy: retry.Policy{Retries: -1}}
	_, _, _, _, err := f.get(context.Background(), srv.URL+"/feed", "", 1<<20)
	var se *httperr.StatusError
	if !errors.As(err, &se) || se.Code != 404 || se.URL != srv.URL+"/feed" {
		t.Fatalf("err = %v, want a *httperr.StatusError 404", err)
	}
}
