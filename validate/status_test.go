package validate

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/httperr"
)

// TestGetStatusError: the walker's non-200 wraps the project's one status
// error.
func TestGetStatusError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	w := &walker{client: srv.Client(), opts: Options{Timeout: time.Minute}}
	_, err := w.get(context.Background(), srv.URL+"/x.xml")
	var se *httperr.StatusError
	if !errors.As(err, &se) || se.Code != 404 || se.URL != srv.URL+"/x.xml" {
		t.Fatalf("err = %v, want a *httperr.StatusError 404", err)
	}
}
