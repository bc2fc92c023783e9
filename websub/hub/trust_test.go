package hub

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A thin ping (hub.mode=publish) needs the publisher's token as a fat one
// does: without it the hub neither fetches the topic nor stores anything.
func TestThinPingNeedsToken(t *testing.T) {
	var fetched int
	topicSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched++
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, "<urlset/>")
	}))
	defer topicSrv.Close()
	topic := topicSrv.URL + "/changes.xml"
	th := newTestHub(t, func(c *Config) { c.PublishToken = "tok" })
	sub := newSubscriber(t)
	th.subscribe(t, topic, sub.url("/cb"), nil)
	ping := func(auth string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, th.URL, strings.NewReader(url.Values{"hub.mode": {"publish"}, "hub.url": {topic}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := th.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
			t.Error("401 without WWW-Authenticate")
		}
		return resp.StatusCode, string(b)
	}
	for _, auth := range []string{"", "Bearer nope", "tok"} {
		if code, msg := ping(auth); code != http.StatusUnauthorized || !strings.Contains(msg, "bearer token") {
			t.Errorf("thin ping with %q: %d %s, want 401", auth, code, msg)
		}
	}
	if fetched != 0 {
		t.Errorf("the topic was fetched %d times for unauthorised pings", fetched)
	}
	if code, msg := ping("Bearer tok"); code != http.StatusAccepted {
		t.Fatalf("thin ping with the token: %d %s", code, msg)
	}
	waitFor(t, 5*time.Second, "delivery", func() bool { return len(sub.deliveries()) == 1 })
}

// The pending-verification limit counts per callback host and port: one
// subscriber that fills its allowance does not block another on the same
// host (a different port).
func TestPendingLimitPerHostAndPort(t *testing.T) {
	th := newTestHub(t, func(c *Config) { c.MaxPendingPerHost = 2 })
	abusive, other := newSubscriber(t), newSubscriber(t)
	block := make(chan struct{})
	abusive.verify = func(w http.ResponseWriter, r *http.Request) {
		<-block
		io.WriteString(w, r.URL.Query().Get("hub.challenge"))
	}
	defer close(block)
	for i, want := range []int{202, 202, 429} {
		code, msg := th.post(t, form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", abusive.url("/"+strconv.Itoa(i))))
		if code != want {
			t.Fatalf("abusive request %d: %d %s, want %d", i, code, msg, want)
		}
		if code == 429 && !strings.Contains(msg, "host and port") {
			t.Errorf("429 message: %s", msg)
		}
	}
	// Same host (127.0.0.1), another port: still accepted and verified.
	th.subscribe(t, topicA, other.url("/cb"), nil)
}

// A publish whose Link values come in separate header fields (RFC 9110
// §5.3), in any order, with a quoted comma and an extra link in a field
// of its own, is accepted; the extra link reaches the subscriber.
func TestPublishRepeatedLinkFields(t *testing.T) {
	th := newTestHub(t, nil)
	sub := newSubscriber(t)
	th.subscribe(t, topicA, sub.url("/cb"), nil)
	req, _ := http.NewRequest(http.MethodPost, th.URL, strings.NewReader("<urlset/>"))
	req.Header.Set("Content-Type", "application/xml")
	req.Header.Add("Link", "<"+th.URL+`>; REL="hub"`)
	req.Header.Add("Link", `<http://127.0.0.1:1/cl.xml>; title="a, b; c"; rel=resourcesync`)
	req.Header.Add("Link", "<"+topicA+`>; title="x,y"; rel="self"`)
	resp, err := th.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("publish with three Link fields: %d %s", resp.StatusCode, b)
	}
	waitFor(t, 5*time.Second, "delivery", func() bool { return len(sub.deliveries()) == 1 })
	l := strings.Join(sub.deliveries()[0].Header.Values("Link"), ", ")
	if !strings.Contains(l, `<http://127.0.0.1:1/cl.xml>; title="a, b; c"; rel=resourcesync`) || !strings.Contains(l, "<"+topicA+`>; rel="self"`) {
		t.Errorf("delivered Link %q", l)
	}
}

// The verification GET appends the hub.* parameters to the callback's
// query exactly as the subscriber sent it: %7e stays %7e, %2F stays %2F,
// and deliveries go to the same bytes.
func TestCallbackQueryPreserved(t *testing.T) {
	th := newTestHub(t, nil)
	sub := newSubscriber(t)
	cb := sub.url("/cb?name=%7ejo&sig=a%2Fb%3D&empty")
	th.subscribe(t, topicA, cb, nil)
	v := sub.verifications()
	if len(v) != 1 {
		t.Fatalf("%d verifications", len(v))
	}
	if !strings.HasPrefix(v[0].RawQuery, "name=%7ejo&sig=a%2Fb%3D&empty&hub.mode=subscribe&") {
		t.Errorf("verification query %q does not start with the callback's own query", v[0].RawQuery)
	}
	th.mustPublish(t, topicA, "<urlset/>")
	waitFor(t, 5*time.Second, "delivery", func() bool { return len(sub.deliveries()) == 1 })
	if got := sub.deliveries()[0].URL; got != "/cb?name=%7ejo&sig=a%2Fb%3D&empty" {
		t.Errorf("delivered to %q", got)
	}
	// The subscription is the same one whether %7e or ~ is written
	// (WS-HUB-8): renewing with ~ does not add a second.
	th.subscribe(t, topicA, sub.url("/cb?name=~jo&sig=a%2Fb%3D&empty"), nil)
	if n := len(th.Subscriptions(topicA)); n != 1 {
		t.Errorf("%d subscriptions after renewing with ~", n)
	}
}
