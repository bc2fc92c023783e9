package fetch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/resourcesync-go/resourcesync/httperr"
)

// TestFetchStatusError: a 404 is the project's one status error.
func TestFetchStatusError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	f := &Fetcher{Client: srv.Client(), Retries: -1}
	_, err := f.Fetch(context.Background(), Request{URLs: []string{srv.URL + "/a"}, Path: filepath.Join(t.TempDir(), "a")})
	var se *httperr.StatusError
	if !errors.As(err, &se) || se.Code != 404 || se.URL != srv.URL+"/a" || !errors.Is(err, ErrStatus) {
		t.Fatalf("err = %v, want a *httperr.StatusError 404", err)
	}
}
