package hub

import (
	"net/http"
	"net/url"
	"sync"
	"testing"
)

// TestSubscriberAuth: Config.SubscriberAuth decides every subscription
// request, subscribe and unsubscribe alike, before anything else; a
// publish is not asked about.
func TestSubscriberAuth(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	th := newTestHub(t, func(c *Config) {
		c.SubscriberAuth = func(w http.ResponseWriter, r *http.Request) bool {
			mu.Lock()
			asked = append(asked, r.PostForm.Get("hub.mode"))
			mu.Unlock()
			if r.Header.Get("X-Test-Auth") == "" {
				w.WriteHeader(http.StatusUnauthorized)
				return false
			}
			return true
		}
	})
	for _, mode := range []string{"subscribe", "unsubscribe"} {
		code, body := th.post(t, url.Values{"hub.mode": {mode}, "hub.topic": {"http://127.0.0.1:1/t"}, "hub.callback": {"http://127.0.0.1:1/cb"}})
		if code != http.StatusUnauthorized {
			t.Errorf("%s refused by SubscriberAuth: %d %s", mode, code, body)
		}
	}
	if code, body := th.fatPing(t, "http://127.0.0.1:1/t", "application/xml", []byte("<x/>"), nil); code == http.StatusUnauthorized {
		t.Errorf("publish asked SubscriberAuth: %d %s", code, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || asked[0] != "subscribe" || asked[1] != "unsubscribe" {
		t.Errorf("asked for %q, want subscribe and unsubscribe", asked)
	}
}
