package hub

// The edge cases and traps WEBSUB.md lists for hubs (WS-HUB-*, WS-RS-*).

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const topicA = "http://127.0.0.1:1/channel/a.xml" // never fetched

func form(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

// WS-HUB-6: request errors get 4xx with a plain-text reason.
func TestRequestErrorsAre4xxWithReason(t *testing.T) {
	th := newTestHub(t, nil)
	sub := newSubscriber(t)
	cb := sub.url("/cb")
	cases := []struct {
		name string
		f    url.Values
		code int
		want string
	}{
		{"no mode", form("hub.topic", topicA, "hub.callback", cb), 400, "hub.mode"},
		{"bad mode", form("hub.mode", "subscribe-me", "hub.topic", topicA, "hub.callback", cb), 400, "hub.mode"},
		{"no topic", form("hub.mode", "subscribe", "hub.callback", cb), 400, "hub.topic"},
		{"no callback", form("hub.mode", "subscribe", "hub.topic", topicA), 400, "hub.callback"},
		{"relative callback", form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", "/cb"), 400, "hub.callback"},
		{"ftp callback", form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", "ftp://127.0.0.1/x"), 400, "http"},
		{"userinfo", form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", "http://u:p@127.0.0.1/x"), 400, "user"},
		{"fragment", form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", cb+"#frag"), 400, "fragment"},
		{"long url", form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", cb+"?"+strings.Repeat("x", 5000)), 400, "longer"},
		{"publish without url", form("hub.mode", "publish"), 400, "hub.url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, msg := th.post(t, c.f)
			if code != c.code || !strings.Contains(msg, c.want) {
				t.Errorf("got %d %q, want %d mentioning %q", code, msg, c.code, c.want)
			}
		})
	}
	resp, err := th.client.Get(th.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET on the hub: %d", resp.StatusCode)
	}
	// A form body over 64 KiB.
	code, _ := th.post(t, form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", cb, "pad", strings.Repeat("x", 70<<10)))
	if code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized form: %d", code)
	}
	if n := len(sub.verifications()); n != 0 {
		t.Errorf("refused requests caused %d verifications", n)
	}
}

// WS-HUB-2a: the secret must be shorter than 200 bytes (200 is refused,
// 199 accepted — the trap is accepting exactly 200).
func TestSecretMustBeShorterThan200Bytes(t *testing.T) {
	th := newTestHub(t, nil)
	sub := newSubscriber(t)
	code, msg := th.post(t, form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", sub.url("/a"), "hub.secret", strings.Repeat("s", 200)))
	if code != http.StatusBadRequest || !strings.Contains(msg, "200") {
		t.Fatalf("200-byte secret: %d %s", code, msg)
	}
	th.subscribe(t, topicA, sub.url("/b"), form("hub.secret", strings.Repeat("s", 199)))
}

// WS-HUB-3, WS-HUB-13, WS-HUB-18: leases are clamped, not refused, and
// hub.lease_seconds is always sent (on unsubscribe too); the lease counts
// from the verification request.
func TestLeaseClampedAndAlwaysSent(t *testing.T) {
	th := newTestHub(t, func(c *Config) {
		c.LeaseMin, c.LeaseDefault, c.LeaseMax = time.Minute, time.Hour, 24*time.Hour
	})
	sub := newSubscriber(t)
	cases := []struct{ req, want string }{
		{"", "3600"}, {"5", "60"}, {"7200", "7200"}, {"99999999999", "86400"}, {"-3", "3600"}, {"abc", "3600"},
	}
	for i, c := range cases {
		cb := sub.url("/lease/" + strconv.Itoa(i))
		extra := url.Values{}
		if c.req != "" {
			extra.Set("hub.lease_seconds", c.req)
		}
		before := time.Now()
		th.subscribe(t, topicA, cb, extra)
		v := sub.verifications()
		if got := v[len(v)-1].Query.Get("hub.lease_seconds"); got != c.want {
			t.Errorf("requested %q: granted %s, want %s", c.req, got, c.want)
		}
		for _, s := range th.Subscriptions(topicA) {
			if s.Callback == cb {
				n, _ := strconv.Atoi(c.want)
				if d := s.Expires.Sub(before); d < time.Duration(n)*time.Second-time.Second || d > time.Duration(n)*time.Second+5*time.Second {
					t.Errorf("expires in %v, want %ss", d, c.want)
				}
			}
		}
	}
	// Unsubscribe: lease_seconds is ignored in the request but sent.
	th.post(t, form("hub.mode", "unsubscribe", "hub.topic", topicA, "hub.callback", sub.url("/lease/0"), "hub.lease_seconds", "5"))
	th.waitNoPending(t)
	v := sub.verifications()
	if q := v[len(v)-1].Query; q.Get("hub.mode") != "unsubscribe" || q.Get("hub.lease_seconds") == "" {
		t.Errorf("unsubscribe verification: %v", q)
	}
}

// WS-HUB-4: legacy hub.verify_token is echoed; unknown parameters ignored.
func TestVerifyTokenEchoed(t *testing.T) {
	th := newTestHub(t, nil)
	sub := newSubscriber(t)
	th.subscribe(t, topicA, sub.url("/cb"), form("hub.verify_token", "tok 1", "hub.verify", "async"))
	if got := sub.verifications()[0].Query.Get("hub.verify_token"); got != "tok 1" {
		t.Errorf("hub.verify_token = %q", got)
	}
}

// WS-HUB-14: the callback's own query string is preserved and the hub.*
// parameters appended: nothing reordered, nothing overwritten.
func TestVerificationPreservesCallbackQuery(t *testing.T) {
	th := newTestHub(t, nil)
	sub := newSubscriber(t)
	sub.verify = func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Query()["hub.challenge"][len(r.URL.Query()["hub.challenge"])-1])
	}
	cb := sub.url("/cb?z=1&a=2&hub.mode=mine&a=3&token=x%2By")
	th.subscribe(t, topicA, cb, nil)
	raw := sub.verifications()[0].RawQuery
	if !strings.HasPrefix(raw, "z=1&a=2&hub.mode=mine&a=3&token=x%2By&hub.mode=subscribe&hub.topic=") {
		t.Fatalf("callback query not preserved: %s", raw)
	}
	for _, p := range []string{"&hub.challenge=", "&hub.lease_seconds="} {
		if !strings.Contains(raw, p) {
			t.Errorf("missing %s in %s", p, raw)
		}
	}
	// Deliveries go to the exact callback URL, query included (WS-HUB-21).
	th.mustPublish(t, topicA, "<urlset/>")
	waitFor(t, 5*time.Second, "delivery", func() bool { return len(sub.deliveries()) == 1 })
	if got := sub.deliveries()[0].URL; got != "/cb?z=1&a=2&hub.mode=mine&a=3&token=x%2By" {
		t.Errorf("delivered to %s", got)
	}
}

// WS-HUB-15: success is any 2xx whose body is exactly the challenge;
// prefix matches, junk after the challenge, non-2xx and redirects fail.
func TestVerificationNeedsExact2xxEcho(t *testing.T) {
	th := newTestHub(t, nil)
	var redirectTargetHit atomic.Bool
	target := newSubscriber(t)
	target.verify = func(w http.ResponseWriter, r *http.Request) {
		redirectTargetHit.Store(true)
		io.WriteString(w, r.URL.Query().Get("hub.challenge"))
	}
	cases := []struct {
		name string
		ok   bool
		f    func(w http.ResponseWriter, r *http.Request)
	}{
		{"200 echo", true, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.URL.Query().Get("hub.challenge")) }},
		{"202 echo", true, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(202)
			io.WriteString(w, r.URL.Query().Get("hub.challenge"))
		}},
		{"299 echo", true, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(299)
			io.WriteString(w, r.URL.Query().Get("hub.challenge"))
		}},
		{"challenge plus junk", false, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, r.URL.Query().Get("hub.challenge")+"junk")
		}},
		{"trailing newline", false, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, r.URL.Query().Get("hub.challenge")+"\n")
		}},
		{"prefix", false, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, r.URL.Query().Get("hub.challenge")[:10])
		}},
		{"empty 200", false, func(w http.ResponseWriter, r *http.Request) {}},
		{"404 echo", false, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(404)
			io.WriteString(w, r.URL.Query().Get("hub.challenge"))
		}},
		{"redirect", false, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.url("/t?"+r.URL.RawQuery), http.StatusFound)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sub := newSubscriber(t)
			sub.verify = c.f
			cb := sub.url("/cb")
			code, _ := th.post(t, form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", cb))
			if code != http.StatusAccepted {
				t.Fatalf("answered %d before verification (WS-HUB-5 wants 202)", code)
			}
			th.waitNoPending(t)
			active := false
			for _, s := range th.Subscriptions(topicA) {
				active = active || s.Callback == cb
			}
			if active != c.ok {
				t.Errorf("active = %v, want %v", active, c.ok)
			}
		})
	}
	if redirectTargetHit.Load() {
		t.Error("the verification followed a redirect")
	}
}

// WS-HUB-17: a 404 is an explicit refusal and not retried; a 5xx is
// retried with backoff and can then succeed.
func TestVerificationRetries5xxNot404(t *testing.T) {
	th := newTestHub(t, nil)
	s404 := newSubscriber(t)
	s404.verify = func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }
	s503 := newSubscriber(t)
	var n atomic.Int32
	s503.verify = func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) < 3 {
			w.WriteHeader(503)
			return
		}
		io.WriteString(w, r.URL.Query().Get("hub.challenge"))
	}
	th.post(t, form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", s404.url("/cb")))
	th.subscribe(t, topicA, s503.url("/cb"), nil)
	th.waitNoPending(t)
	if got := len(s404.verifications()); got != 1 {
		t.Errorf("404 was asked %d times, want 1", got)
	}
	if got := len(s503.verifications()); got != 3 {
		t.Errorf("503 was asked %d times, want 3", got)
	}
}

// WS-HUB-8, WS-HUB-9: identity is (topic, callback) after decoding
// percent-encoded unreserved characters; a re-subscription adopts the new
// secret (or drops it) without a second row; a failed re-verification
// leaves the old state untouched.
func TestResubscribeAdoptsSecretAndKeepsStateOnFailure(t *testing.T) {
	th := newTestHub(t, nil)
	sub := newSubscriber(t)
	cb := sub.url("/~user/cb")
	th.subscribe(t, topicA, cb, form("hub.secret", "first"))
	// Same pair, spelled with %7E: must replace, not add.
	th.post(t, form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", sub.url("/%7Euser/cb"), "hub.secret", "second"))
	th.waitNoPending(t)
	if n := len(th.Subscriptions(topicA)); n != 1 {
		t.Fatalf("%d subscriptions, want 1", n)
	}
	th.mustPublish(t, topicA, "<urlset>1</urlset>")
	waitFor(t, 5*time.Second, "delivery 1", func() bool { return len(sub.deliveries()) == 1 })
	if got, want := sub.deliveries()[0].Header.Get("X-Hub-Signature"), sign("sha256", "second", []byte("<urlset>1</urlset>")); got != want {
		t.Errorf("signature %s, want the new secret's %s", got, want)
	}
	// A re-subscription whose verification fails changes nothing.
	sub.mu.Lock()
	sub.verify = func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }
	sub.mu.Unlock()
	th.post(t, form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", cb))
	th.waitNoPending(t)
	th.mustPublish(t, topicA, "<urlset>2</urlset>")
	waitFor(t, 5*time.Second, "delivery 2", func() bool { return len(sub.deliveries()) == 2 })
	if got := sub.deliveries()[1].Header.Get("X-Hub-Signature"); got != sign("sha256", "second", []byte("<urlset>2</urlset>")) {
		t.Errorf("after a failed re-verification the secret changed: %q", got)
	}
	// A verified re-subscription without a secret drops it.
	sub.mu.Lock()
	sub.verify = nil
	sub.mu.Unlock()
	th.post(t, form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", cb))
	th.waitNoPending(t)
	th.mustPublish(t, topicA, "<urlset>3</urlset>")
	waitFor(t, 5*time.Second, "delivery 3", func() bool { return len(sub.deliveries()) == 3 })
	if got := sub.deliveries()[2].Header.Get("X-Hub-Signature"); got != "" {
		t.Errorf("secret dropped by re-subscription, yet signed: %q", got)
	}
}

// WS-HUB-10: unsubscribing a pair that is not subscribed still gets 202
// and a verification (no leak of who is subscribed), and is a no-op.
func TestUnsubscribeUnknownIsAcceptedNoop(t *testing.T) {
	th := newTestHub(t, nil)
	sub := newSubscriber(t)
	code, _ := th.post(t, form("hub.mode", "unsubscribe", "hub.topic", topicA, "hub.callback", sub.url("/cb")))
	if code != http.StatusAccepted {
		t.Fatalf("answered %d", code)
	}
	th.waitNoPending(t)
	if len(sub.verifications()) != 1 || th.Stats().Subscriptions != 0 {
		t.Fatalf("verifications %d, subscriptions %d", len(sub.verifications()), th.Stats().Subscriptions)
	}
}

// WS-HUB-18, WS-HUB-20: an expired lease gets nothing and is swept.
func TestLeaseExpiryStopsDelivery(t *testing.T) {
	var offset atomic.Int64
	th := newTestHub(t, func(c *Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	})
	sub := newSubscriber(t)
	th.subscribe(t, topicA, sub.url("/cb"), form("hub.lease_seconds", "3600"))
	th.mustPublish(t, topicA, "<a/>")
	waitFor(t, 5*time.Second, "delivery", func() bool { return len(sub.deliveries()) == 1 })
	offset.Store(int64(time.Hour + time.Second))
	th.mustPublish(t, topicA, "<b/>")
	waitFor(t, 5*time.Second, "expiry", func() bool { return th.Stats().Subscriptions == 0 })
	time.Sleep(100 * time.Millisecond)
	if n := len(sub.deliveries()); n != 1 {
		t.Fatalf("expired subscription got %d deliveries", n)
	}
}

// WS-HUB-21..25, RS-WS-5, WS-RS-4: Content-Type byte for byte, one Link
// header with self, hub and the ResourceSync link, lowercase-hex sha256
// signature over the exact bytes, delivery id and attempt headers.
func TestDeliveryHeadersPassThrough(t *testing.T) {
	th := newTestHub(t, nil)
	sub := newSubscriber(t)
	th.subscribe(t, topicA, sub.url("/cb"), form("hub.secret", "s3cret"))
	body := []byte("<?xml version=\"1.0\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"/>\n")
	ct := `application/xml;charset="UTF-8"`
	code, msg := th.fatPing(t, topicA, ct, body, map[string]string{
		"Link": `<http://127.0.0.1:1/capabilitylist.xml>; rel="resourcesync"`,
	})
	if code != http.StatusAccepted {
		t.Fatalf("fat ping: %d %s", code, msg)
	}
	waitFor(t, 5*time.Second, "delivery", func() bool { return len(sub.deliveries()) == 1 })
	d := sub.deliveries()[0]
	if d.Body != string(body) {
		t.Errorf("body changed: %q", d.Body)
	}
	if got := d.Header.Values("Content-Type"); len(got) != 1 || got[0] != ct {
		t.Errorf("Content-Type %q, want %q", got, ct)
	}
	links := d.Header.Values("Link")
	want := "<" + topicA + `>; rel="self", <` + th.URL + `>; rel="hub", <http://127.0.0.1:1/capabilitylist.xml>; rel="resourcesync"`
	if len(links) != 1 || links[0] != want {
		t.Errorf("Link %q,\nwant %q", links, want)
	}
	if got := d.Header.Get("X-Hub-Signature"); got != sign("sha256", "s3cret", body) || got != strings.ToLower(got) {
		t.Errorf("signature %q", got)
	}
	if d.Header.Get("X-Hub-Delivery-Id") == "" || d.Header.Get("X-Hub-Attempt") != "1" || d.Header.Get("User-Agent") == "" {
		t.Errorf("headers: %v", d.Header)
	}
}

// The ResourceSync publish (RS-WS-2, WS-HUB-31/32): exactly one rel=self,
// a rel=hub naming this hub, a Content-Type, the payload limit, and the
// optional publisher token (WS-SEC-5).
func TestFatPingValidation(t *testing.T) {
	th := newTestHub(t, func(c *Config) { c.PublishToken = "tok"; c.MaxPayloadBytes = 1000 })
	auth := map[string]string{"Authorization": "Bearer tok"}
	post := func(links []string, ct string, body string, hdr map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, th.URL, strings.NewReader(body))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		for _, l := range links {
			req.Header.Add("Link", l)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := th.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	self, hub := "<"+topicA+`>; rel="self"`, "<"+th.URL+`>; rel="hub"`
	cases := []struct {
		name  string
		links []string
		ct    string
		body  string
		hdr   map[string]string
		code  int
	}{
		{"ok", []string{self, hub}, "application/xml", "<urlset/>", auth, 202},
		{"combined field", []string{self + ", " + hub}, "application/xml", "<urlset/>", auth, 202},
		{"no token", []string{self, hub}, "application/xml", "<urlset/>", nil, 401},
		{"wrong token", []string{self, hub}, "application/xml", "<urlset/>", map[string]string{"Authorization": "Bearer nope"}, 401},
		{"no self", []string{hub}, "application/xml", "<urlset/>", auth, 400},
		{"two selfs", []string{self, hub, "<http://127.0.0.1:1/other>; rel=\"self\""}, "application/xml", "<urlset/>", auth, 400},
		{"no hub", []string{self}, "application/xml", "<urlset/>", auth, 400},
		{"other hub", []string{self, `<http://127.0.0.1:1/hub>; rel="hub"`}, "application/xml", "<urlset/>", auth, 400},
		{"no content type", []string{self, hub}, "", "<urlset/>", auth, 415},
		{"too large", []string{self, hub}, "application/xml", strings.Repeat("x", 1001), auth, 413},
	}
	for _, c := range cases {
		if got := post(c.links, c.ct, c.body, c.hdr); got != c.code {
			t.Errorf("%s: %d, want %d", c.name, got, c.code)
		}
	}
}

// WS-HUB-30: thin pings with hub.url, repeated values and hub.url[];
// the hub fetches each topic once; without subscribers nothing is fetched.
func TestThinPingVariants(t *testing.T) {
	th := newTestHub(t, nil)
	var fetches atomic.Int32
	topicSrv := newSubscriber(t) // reused as a plain server
	topicSrv.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "content of "+r.URL.Path)
	})
	t1, t2 := topicSrv.url("/t1"), topicSrv.url("/t2")
	code, _ := th.post(t, form("hub.mode", "publish", "hub.url", t1))
	if code != 202 || fetches.Load() != 0 {
		t.Fatalf("publish without subscribers: %d, %d fetches", code, fetches.Load())
	}
	sub := newSubscriber(t)
	th.subscribe(t, t1, sub.url("/1"), nil)
	th.subscribe(t, t2, sub.url("/2"), nil)
	code, msg := th.post(t, url.Values{"hub.mode": {"publish"}, "hub.url": {t1, t2}, "hub.topic": {t1}})
	if code != 202 {
		t.Fatalf("%d %s", code, msg)
	}
	code, _ = th.post(t, url.Values{"hub.mode": {"publish"}, "hub.url[]": {t2}})
	if code != 202 {
		t.Fatalf("hub.url[]: %d", code)
	}
	waitFor(t, 5*time.Second, "3 deliveries", func() bool { return len(sub.deliveries()) == 3 })
	if fetches.Load() != 3 {
		t.Errorf("%d fetches, want 3 (duplicates fetched once)", fetches.Load())
	}
	// A topic that fails to fetch is not distributed: 502 with a reason.
	th.subscribe(t, topicSrv.url("/gone"), sub.url("/3"), nil)
	topicSrv.srv.Config.Handler = http.NotFoundHandler()
	code, msg = th.post(t, form("hub.mode", "publish", "hub.url", topicSrv.url("/gone")))
	if code != http.StatusBadGateway || !strings.Contains(msg, "404") {
		t.Errorf("failed fetch: %d %q", code, msg)
	}
}

// WS-HUB-26: any 2xx is success; a redirect is a failure and is not
// followed. WS-HUB-27: 410 Gone ends the subscription.
func TestDeliveryRedirectFailsAndGoneEnds(t *testing.T) {
	th := newTestHub(t, func(c *Config) { c.GiveUpAfter = 150 * time.Millisecond })
	other := newSubscriber(t)
	redir := newSubscriber(t)
	redir.status = func(int, delivery) int { return http.StatusTemporaryRedirect }
	redir.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			redir.serve(w, r)
			return
		}
		redir.attempts.Add(1)
		http.Redirect(w, r, other.url("/x"), http.StatusTemporaryRedirect)
	})
	gone := newSubscriber(t)
	gone.status = func(int, delivery) int { return http.StatusGone }
	th.subscribe(t, topicA, redir.url("/cb"), nil)
	th.subscribe(t, topicA, gone.url("/cb"), nil)
	th.mustPublish(t, topicA, "<x/>")
	waitFor(t, 5*time.Second, "410 to end the subscription", func() bool { return len(th.Subscriptions(topicA)) == 1 })
	waitFor(t, 5*time.Second, "the redirected delivery to be dead-lettered", func() bool { return th.Stats().DeadLetters == 1 })
	if redir.attempts.Load() < 2 {
		t.Errorf("redirect answered %d times: it should count as a failure and be retried", redir.attempts.Load())
	}
	if len(other.deliveries()) != 0 {
		t.Error("the delivery followed a redirect")
	}
	if gone.attempts.Load() != 1 {
		t.Errorf("410 subscriber asked %d times", gone.attempts.Load())
	}
}

// WS-HUB-28: a notification failing past GiveUpAfter is dead-lettered;
// the subscription stays and gets the next ones; Replay delivers it.
func TestDeadLetterKeepsSubscriptionAndReplays(t *testing.T) {
	th := newTestHub(t, func(c *Config) { c.GiveUpAfter = 200 * time.Millisecond })
	sub := newSubscriber(t)
	var failing atomic.Bool
	failing.Store(true)
	sub.status = func(_ int, d delivery) int {
		if failing.Load() && d.Body == "<one/>" {
			return 500
		}
		return 200
	}
	th.subscribe(t, topicA, sub.url("/cb"), nil)
	th.mustPublish(t, topicA, "<one/>")
	th.mustPublish(t, topicA, "<two/>")
	waitFor(t, 5*time.Second, "<two/>", func() bool { return len(sub.deliveries()) == 1 })
	if got := sub.deliveries()[0].Body; got != "<two/>" {
		t.Fatalf("got %q", got)
	}
	if th.Stats().Subscriptions != 1 {
		t.Fatal("the subscription was dropped after failures")
	}
	dl, err := th.DeadLetters(context.Background())
	if err != nil || len(dl) != 1 || string(dl[0].Body) != "<one/>" || dl[0].Attempts < 2 || dl[0].LastError == "" {
		t.Fatalf("dead letters: %+v %v", dl, err)
	}
	if err := th.Replay(context.Background(), dl[0].ID); err == nil {
		t.Fatal("replay to a still failing subscriber succeeded")
	}
	failing.Store(false)
	admin := th.AdminHandler("adm")
	rec := httptest.NewRecorder()
	admin.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/admin/dead-letters", nil))
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("admin without token: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/admin/dead-letters", nil)
	req.Header.Set("Authorization", "Bearer adm")
	admin.ServeHTTP(rec, req)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"seq": 1`) {
		t.Errorf("admin dead-letters: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	req = httptest.NewRequest(http.MethodPost, "/admin/replay?id="+strconv.FormatUint(dl[0].ID, 10), nil)
	req.Header.Set("Authorization", "Bearer adm")
	admin.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("admin replay: %d %s", rec.Code, rec.Body)
	}
	if got := sub.deliveries()[1].Body; got != "<one/>" {
		t.Fatalf("replayed %q", got)
	}
	if th.Stats().DeadLetters != 0 {
		t.Fatal("dead letter kept after a successful replay")
	}
}

// A subscriber that fails for a while receives everything, in order, once
// it recovers (retries with backoff; Retry-After honoured).
func TestFailingSubscriberRecoversAndGetsEverything(t *testing.T) {
	th := newTestHub(t, nil)
	sub := newSubscriber(t)
	var down atomic.Bool
	down.Store(true)
	sub.status = func(int, delivery) int {
		if down.Load() {
			return 503
		}
		return 200
	}
	ok := newSubscriber(t)
	th.subscribe(t, topicA, sub.url("/cb"), nil)
	th.subscribe(t, topicA, ok.url("/cb"), nil)
	const n = 10
	for i := range n {
		th.mustPublish(t, topicA, fmt.Sprintf("<n%d/>", i))
	}
	waitFor(t, 5*time.Second, "the healthy subscriber", func() bool { return len(ok.deliveries()) == n })
	waitFor(t, 5*time.Second, "some failed attempts", func() bool { return sub.attempts.Load() >= 4 })
	down.Store(false)
	waitFor(t, 10*time.Second, "recovery", func() bool { return len(sub.deliveries()) >= n })
	for i, d := range sub.deliveries()[:n] {
		if d.Body != fmt.Sprintf("<n%d/>", i) {
			t.Fatalf("delivery %d is %q: out of order", i, d.Body)
		}
	}
	if th.Stats().DeadLetters != 0 {
		t.Error("dead letters while the give-up time was not reached")
	}
}

// A slow subscriber never delays the others; deliveries to one callback
// host never exceed MaxConcurrentPerHost.
func TestSlowSubscriberDoesNotDelayOthersAndHostLimit(t *testing.T) {
	th := newTestHub(t, func(c *Config) { c.MaxConcurrentPerHost = 3 })
	release := make(chan struct{})
	// One server, so that its in-flight count covers the slow callback too.
	srv := newSubscriber(t)
	srv.delay = 20 * time.Millisecond
	srv.status = func(_ int, d delivery) int {
		if strings.HasPrefix(d.URL, "/slow") {
			<-release
		}
		return 200
	}
	t.Cleanup(func() { close(release) })
	th.subscribe(t, topicA, srv.url("/slow"), nil)
	for i := range 8 {
		th.subscribe(t, topicA, srv.url(fmt.Sprintf("/f%d", i)), nil)
	}
	start := time.Now()
	for i := range 3 {
		th.mustPublish(t, topicA, fmt.Sprintf("<n%d/>", i))
	}
	waitFor(t, 5*time.Second, "the fast subscribers", func() bool { return len(srv.deliveries()) == 24 })
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("fast subscribers took %v", d)
	}
	if m := srv.maxInfl.Load(); m > 3 {
		t.Errorf("%d concurrent deliveries to one host, limit 3", m)
	}
}

// §4.3: publish requests beyond PublishRate get 429 with Retry-After.
func TestPublishRateLimit(t *testing.T) {
	th := newTestHub(t, func(c *Config) { c.PublishRate = 3 })
	codes := map[int]int{}
	for range 6 {
		code, _ := th.fatPing(t, topicA, "application/xml", []byte("<x/>"), nil)
		codes[code]++
	}
	if codes[202] < 3 || codes[429] < 1 {
		t.Fatalf("codes %v", codes)
	}
}

// Limits: subscriptions per topic.
func TestSubscriptionsPerTopicLimit(t *testing.T) {
	th := newTestHub(t, func(c *Config) { c.MaxSubscriptionsPerTopic = 2 })
	sub := newSubscriber(t)
	th.subscribe(t, topicA, sub.url("/1"), nil)
	th.subscribe(t, topicA, sub.url("/2"), nil)
	code, msg := th.post(t, form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", sub.url("/3")))
	if code != http.StatusTooManyRequests {
		t.Fatalf("third subscription: %d %s", code, msg)
	}
	th.subscribe(t, topicA, sub.url("/2"), nil) // renewing is fine
}

// WS-SEC-4: pending verifications per callback host are capped, so the
// hub cannot be made to flood one host with GETs.
func TestPendingVerificationsPerHostLimit(t *testing.T) {
	th := newTestHub(t, func(c *Config) { c.MaxPendingPerHost = 2 })
	sub := newSubscriber(t)
	block := make(chan struct{})
	sub.verify = func(w http.ResponseWriter, r *http.Request) {
		<-block
		io.WriteString(w, r.URL.Query().Get("hub.challenge"))
	}
	for i, want := range []int{202, 202, 429} {
		code, msg := th.post(t, form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", sub.url("/"+strconv.Itoa(i))))
		if code != want {
			t.Fatalf("request %d: %d %s, want %d", i, code, msg, want)
		}
	}
	close(block)
	th.waitNoPending(t)
	th.subscribe(t, topicA, sub.url("/2"), nil) // room again
}

// WS-RS-5: the embedded hub only serves its Source's topics.
func TestTopicAllowed(t *testing.T) {
	th := newTestHub(t, func(c *Config) { c.TopicAllowed = func(t string) bool { return t == topicA } })
	sub := newSubscriber(t)
	code, _ := th.post(t, form("hub.mode", "subscribe", "hub.topic", "http://127.0.0.1:1/other", "hub.callback", sub.url("/1")))
	if code != http.StatusForbidden {
		t.Fatalf("foreign topic: %d", code)
	}
	th.subscribe(t, topicA, sub.url("/1"), nil)
}

// In-process Publish (the embedded hub) with extra links, and /metrics.
func TestInProcessPublishAndMetrics(t *testing.T) {
	th := newTestHub(t, nil)
	sub := newSubscriber(t)
	th.subscribe(t, topicA, sub.url("/cb"), nil)
	seq, err := th.Publish(context.Background(), topicA, "application/xml", []byte("<urlset/>"), []string{`<http://127.0.0.1:1/cl.xml>; rel="resourcesync"`})
	if err != nil || seq != 1 {
		t.Fatalf("Publish: %d %v", seq, err)
	}
	waitFor(t, 5*time.Second, "delivery", func() bool { return len(sub.deliveries()) == 1 })
	if l := sub.deliveries()[0].Header.Get("Link"); !strings.Contains(l, `rel="resourcesync"`) || !strings.Contains(l, th.URL) {
		t.Errorf("Link %q", l)
	}
	rec := &responseRecorder{h: http.Header{}}
	th.Metrics().ServeHTTP(rec, httpGet("/metrics"))
	for _, m := range []string{"websub_hub_subscriptions 1", `websub_hub_publishes_total{kind="inproc"} 1`,
		`websub_hub_deliveries_total{outcome="success"} 1`, "websub_hub_delivery_retries_total 0",
		"websub_hub_delivery_failures_total 0", "websub_hub_backlog_notifications 0", "websub_hub_pending_verifications 0",
		"websub_hub_delivery_duration_seconds_count 1", "websub_hub_delivery_lag_seconds_count 1"} {
		if !strings.Contains(rec.b.String(), m) {
			t.Errorf("metrics lack %q", m)
		}
	}
}

type responseRecorder struct {
	h    http.Header
	b    strings.Builder
	code int
	mu   sync.Mutex
}

func (r *responseRecorder) Header() http.Header         { return r.h }
func (r *responseRecorder) Write(p []byte) (int, error) { return r.b.Write(p) }
func (r *responseRecorder) WriteHeader(c int)           { r.code = c }

func httpGet(path string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
	return req
}

// A restart keeps subscriptions, pending verifications and the log.
func TestRestartKeepsState(t *testing.T) {
	dir := t.TempDir()
	sub := newSubscriber(t)
	th := newTestHub(t, func(c *Config) { c.StateDir = dir })
	th.subscribe(t, topicA, sub.url("/cb"), nil)
	th.stop()
	th.mustPublish(t, topicA, "<while-stopped/>") // stored; nothing runs
	th.srv.Close()
	th.Close()
	th2 := newTestHub(t, func(c *Config) { c.StateDir = dir })
	waitFor(t, 5*time.Second, "delivery after restart", func() bool { return len(sub.deliveries()) == 1 })
	if th2.Stats().Subscriptions != 1 {
		t.Fatal("subscription lost")
	}
	// An unsubscription survives the restart too (no cursor flush
	// writes the record back).
	th2.mustPublish(t, topicA, "<more/>")
	th2.post(t, form("hub.mode", "unsubscribe", "hub.topic", topicA, "hub.callback", sub.url("/cb")))
	th2.waitNoPending(t)
	time.Sleep(50 * time.Millisecond)
	th2.stop()
	th2.srv.Close()
	th2.Close()
	th3 := newTestHub(t, func(c *Config) { c.StateDir = dir })
	if n := th3.Stats().Subscriptions; n != 0 {
		t.Fatalf("%d subscriptions after unsubscribing and restarting", n)
	}
}
