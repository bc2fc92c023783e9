package hub

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestClusterLongURLs: topics and callbacks up to the hub's URL limit,
// incompressible (a signed token in the query, say), on every store: a
// publish or a subscription is accepted (and then works), or refused with
// a 4xx that says why; never a 5xx "try again" the client would repeat
// forever. (PostgreSQL's btree indexes hold at most 2704 bytes a row.)
func TestClusterLongURLs(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			st := be.open2(t)[0]
			t.Cleanup(func() { st.Close() })
			th := newTestHub(t, func(c *Config) { c.Store, c.StateDir = st, "" })
			sub := newSubscriber(t)
			pad := func(base string, n int) string {
				b := make([]byte, n)
				rand.Read(b)
				return base + "?t=" + base64.RawURLEncoding.EncodeToString(b)[:n-len(base)-3]
			}
			refused := 0
			for _, tc := range []struct {
				name            string
				topic, callback string
			}{
				{"short", "http://127.0.0.1:1/t", sub.url("/cb")},
				{"topic 1000, callback 1000", pad("http://127.0.0.1:1/t", 1000), pad(sub.url("/cb"), 1000)},
				{"topic 2700", pad("http://127.0.0.1:1/t", 2700), sub.url("/cb")},
				{"callback 2700", "http://127.0.0.1:1/t2", pad(sub.url("/cb"), 2700)},
				{"topic 4096", pad("http://127.0.0.1:1/t", maxURLLen), sub.url("/cb")},
				{"both 4096", pad("http://127.0.0.1:1/t", maxURLLen), pad(sub.url("/cb"), maxURLLen)},
			} {
				code, msg := th.fatPing(t, tc.topic, "application/xml", []byte("<x/>"), nil)
				t.Logf("%s: publish: %d %s", tc.name, code, msg)
				if code >= 500 || code != http.StatusAccepted && !strings.Contains(msg, "long") {
					t.Errorf("%s: publish: %d %s", tc.name, code, msg)
				}
				code, msg = th.post(t, url.Values{"hub.mode": {"subscribe"}, "hub.topic": {tc.topic}, "hub.callback": {tc.callback}})
				t.Logf("%s: subscribe: %d %s", tc.name, code, msg)
				switch {
				case code == http.StatusBadRequest:
					refused++
				case code == http.StatusAccepted:
					th.waitActive(t, tc.topic, tc.callback)
				case code >= 500 || !strings.Contains(msg, "long"):
					t.Errorf("%s: subscribe: %d %s", tc.name, code, msg)
				}
			}
			if be.name == "pgstore" && refused == 0 {
				t.Error("PostgreSQL took every subscription: the limits this test is about are gone; drop or update it")
			}
		})
	}
}
