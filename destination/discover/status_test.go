package discover

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/resourcesync-go/resourcesync/httperr"
)

// TestGetterStatusError: a 410 is the project's one status error.
func TestGetterStatusError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) }))
	defer srv.Close()
	g := &Getter{Client: srv.Client(), TempDir: t.TempDir()}
	_, err := g.Open(context.Background(), srv.URL+"/cl.xml")
	var se *httperr.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusGone || se.URL != srv.URL+"/cl.xml" {
		t.Fatalf("err = %v, want a *httperr.StatusError 410", err)
	}
}
