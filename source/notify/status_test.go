package notify_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/resourcesync-go/resourcesync/httperr"
	"github.com/resourcesync-go/resourcesync/source/notify"
)

// TestPublishStatusError: a hub's refusal is the project's one status
// error.
func TestPublishStatusError(t *testing.T) {
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such topic", http.StatusBadRequest)
	}))
	defer hub.Close()
	p := &notify.HTTPPublisher{Hub: hub.URL + "/hub", Client: hub.Client()}
	err := p.Publish(context.Background(), "http://127.0.0.1/topic", "application/xml", []byte("<x/>"), nil)
	var se *httperr.StatusError
	if !errors.As(err, &se) || se.Code != 400 || se.Method != http.MethodPost || se.URL != hub.URL+"/hub" || se.Body != "no such topic" {
		t.Fatalf("err = %v, want a *httperr.StatusError POST 400", err)
	}
}
