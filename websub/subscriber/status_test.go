package subscriber

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/resourcesync-go/resourcesync/httperr"
)

// TestHubStatusError: a HubError wraps the project's one status error.
func TestHubStatusError(t *testing.T) {
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "callback refused", http.StatusForbidden)
	}))
	defer hub.Close()
	s, err := New(Config{Hub: hub.URL + "/hub", Topic: "http://127.0.0.1/topic", CallbackURL: "http://127.0.0.1/cb", Client: hub.Client()})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Subscribe(context.Background())
	var he *HubError
	var se *httperr.StatusError
	if !errors.As(err, &he) || !Refused(err) || !errors.As(err, &se) ||
		se.Code != 403 || se.Method != http.MethodPost || se.URL != hub.URL+"/hub" || se.Body != "callback refused" {
		t.Fatalf("err = %v, want a HubError wrapping a *httperr.StatusError 403", err)
	}
}

// TestDiscoverStatusError: a topic's 404 is the project's one status error.
func TestDiscoverStatusError(t *testing.T) {
	topic := httptest.NewServer(http.NotFoundHandler())
	defer topic.Close()
	_, err := Discover(context.Background(), topic.Client(), topic.URL+"/feed")
	var se *httperr.StatusError
	if !errors.As(err, &se) || se.Code != 404 || se.URL != topic.URL+"/feed" {
		t.Fatalf("err = %v, want a *httperr.StatusError 404", err)
	}
}
