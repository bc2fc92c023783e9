package hub

// One test per hub check of websub.rocks (WEBSUB.md §2.1). Each plays
// websub.rocks' part: a blog topic served on loopback that advertises the
// hub, a subscriber callback applying websub.rocks' verification checks,
// a thin ping `hub.mode=publish&hub.topic=...` (as websub.rocks sends it),
// and the five delivery checks in websub.rocks' order.

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"hash"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/linkheader"
)

// rocksTopic is websub.rocks' sample blog: its content changes with each
// post, and it advertises the hub and itself in Link headers.
type rocksTopic struct {
	srv  *httptest.Server
	mu   sync.Mutex
	ct   string
	body string
	hub  string
}

func newRocksTopic(t *testing.T, hub, ct, body string) *rocksTopic {
	rt := &rocksTopic{ct: ct, body: body, hub: hub}
	rt.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		w.Header().Add("Link", "<"+rt.hub+`>; rel="hub"`)
		w.Header().Add("Link", "<"+rt.srv.URL+r.URL.Path+`>; rel="self"`)
		w.Header()["Content-Type"] = []string{rt.ct}
		if r.Method == http.MethodGet {
			w.Write([]byte(rt.body))
		}
	}))
	t.Cleanup(rt.srv.Close)
	return rt
}

func (rt *rocksTopic) post(body string) {
	rt.mu.Lock()
	rt.body = body
	rt.mu.Unlock()
}

func (rt *rocksTopic) current() (string, string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.ct, rt.body
}

// rocksSubscriber verifies as websub.rocks does: hub.mode subscribe or
// unsubscribe, hub.topic equal to the topic, hub.challenge present,
// hub.lease_seconds present (also on unsubscribe, websub.rocks#14);
// otherwise 404.
func rocksSubscriber(t *testing.T, topic string) *subscriber {
	s := newSubscriber(t)
	s.verify = func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mode := q.Get("hub.mode")
		if (mode != "subscribe" && mode != "unsubscribe") || q.Get("hub.topic") != topic ||
			q.Get("hub.challenge") == "" || q.Get("hub.lease_seconds") == "" {
			t.Errorf("websub.rocks would refuse this verification: %s", r.URL.RawQuery)
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte(q.Get("hub.challenge")))
	}
	return s
}

// rocksCheckDelivery applies websub.rocks' delivery checks, in order.
func rocksCheckDelivery(t *testing.T, d delivery, rt *rocksTopic, hubURL, secret string) {
	t.Helper()
	ct, body := rt.current()
	// 1. fat ping: body not empty
	if d.Body == "" {
		t.Fatal("check 1: empty body (not a fat ping)")
	}
	// 2. body equals a fresh GET of the topic (trimmed)
	if strings.TrimSpace(d.Body) != strings.TrimSpace(body) {
		t.Fatalf("check 2: body %q, topic has %q", d.Body, body)
	}
	// 3. Content-Type string-equal to the topic's
	if got := d.Header.Get("Content-Type"); got != ct {
		t.Fatalf("check 3: Content-Type %q, topic has %q", got, ct)
	}
	// 4. Link: rel=hub equal to the hub URL, rel=self present
	var hubs, selfs []string
	for _, l := range linkheader.Parse(nil, d.Header.Values("Link")) {
		if l.HasRel("hub") {
			hubs = append(hubs, l.Target)
		}
		if l.HasRel("self") {
			selfs = append(selfs, l.Target)
		}
	}
	if len(hubs) == 0 || hubs[0] != hubURL {
		t.Fatalf("check 4: rel=hub %v, want %s", hubs, hubURL)
	}
	if len(selfs) != 1 {
		t.Fatalf("check 4: want exactly one rel=self, got %v", selfs)
	}
	// 5. signature
	sig := d.Header.Get("X-Hub-Signature")
	if secret == "" {
		if sig != "" {
			t.Fatalf("check 5: signature %q sent without a secret", sig)
		}
		return
	}
	alg, hexsum, ok := strings.Cut(sig, "=")
	var f func() hash.Hash
	switch alg {
	case "sha1":
		f = sha1.New
	case "sha256":
		f = sha256.New
	case "sha384":
		f = sha512.New384
	case "sha512":
		f = sha512.New
	}
	if !ok || f == nil {
		t.Fatalf("check 5: bad signature header %q", sig)
	}
	m := hmac.New(f, []byte(secret))
	m.Write([]byte(d.Body))
	if want := hex.EncodeToString(m.Sum(nil)); hexsum != want {
		t.Fatalf("check 5: signature %s, want %s (lowercase hex)", hexsum, want)
	}
}

// rocksRun does the common steps: subscribe (202 required), verification,
// a post on the blog, the thin ping, and waits for the deliveries.
type rocksRun struct {
	th    *testHub
	rt    *rocksTopic
	sub   *subscriber
	topic string
	cb    string
}

func newRocksRun(t *testing.T, ct, body string) *rocksRun {
	th := newTestHub(t, nil)
	rt := newRocksTopic(t, th.URL, ct, body)
	topic := rt.srv.URL + "/blog/100/token"
	sub := rocksSubscriber(t, topic)
	return &rocksRun{th: th, rt: rt, sub: sub, topic: topic, cb: sub.url("/hub/100/sub/token")}
}

func (r *rocksRun) subscribe(t *testing.T, form url.Values) {
	t.Helper()
	f := url.Values{"hub.mode": {"subscribe"}, "hub.topic": {r.topic}, "hub.callback": {r.cb}}
	for k, v := range form {
		f[k] = v
	}
	code, msg := r.th.post(t, f)
	if code != http.StatusAccepted {
		t.Fatalf("Hub Error: subscription answered %d: %s", code, msg)
	}
	r.th.waitNoPending(t)
	r.th.waitActive(t, r.topic, r.cb)
}

func (r *rocksRun) publish(t *testing.T, post string) {
	t.Helper()
	r.rt.post(post)
	code, msg := r.th.post(t, url.Values{"hub.mode": {"publish"}, "hub.topic": {r.topic}})
	if code < 200 || code > 299 {
		t.Fatalf("publish answered %d: %s", code, msg)
	}
}

func (r *rocksRun) waitDeliveries(t *testing.T, n int) []delivery {
	t.Helper()
	waitFor(t, 5*time.Second, "delivery", func() bool { return len(r.sub.deliveries()) >= n })
	return r.sub.deliveries()
}

// quiet waits a moment and asserts that the subscriber got exactly n
// deliveries (websub.rocks waits 15 s; the hub delivers in milliseconds).
func (r *rocksRun) quiet(t *testing.T, n int) {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	if got := len(r.sub.deliveries()); got != n {
		t.Fatalf("got %d notifications, want %d", got, n)
	}
}

func TestWebsubRocks100TypicalSubscriberRequest(t *testing.T) {
	r := newRocksRun(t, "text/html; charset=utf-8", "<html><body><p>first post</p></body></html>")
	r.subscribe(t, nil)
	v := r.sub.verifications()
	if len(v) != 1 || v[0].Query.Get("hub.mode") != "subscribe" {
		t.Fatalf("verifications: %+v", v)
	}
	r.publish(t, "<html><body><p>second post</p></body></html>")
	d := r.waitDeliveries(t, 1)
	rocksCheckDelivery(t, d[0], r.rt, r.th.URL, "")
}

func TestWebsubRocks101SubscriptionWithSecret(t *testing.T) {
	r := newRocksRun(t, "text/html; charset=utf-8", "<p>first</p>")
	secret := "0123456789abcdefghij" // 20 characters, as websub.rocks uses
	r.subscribe(t, url.Values{"hub.secret": {secret}})
	r.publish(t, "<p>signed post</p>")
	d := r.waitDeliveries(t, 1)
	rocksCheckDelivery(t, d[0], r.rt, r.th.URL, secret)
	if !strings.HasPrefix(d[0].Header.Get("X-Hub-Signature"), "sha256=") {
		t.Errorf("default algorithm should be sha256: %q", d[0].Header.Get("X-Hub-Signature"))
	}
}

func TestWebsubRocks102ExtraParameters(t *testing.T) {
	r := newRocksRun(t, "text/html", "<p>first</p>")
	r.subscribe(t, url.Values{"foo": {"bar"}, "hub.foo": {"hub.bar"}})
	r.publish(t, "<p>post</p>")
	rocksCheckDelivery(t, r.waitDeliveries(t, 1)[0], r.rt, r.th.URL, "")
	for _, v := range r.sub.verifications() {
		if v.Query.Has("foo") || v.Query.Has("hub.foo") {
			t.Errorf("unknown parameters were passed on: %s", v.RawQuery)
		}
	}
}

func TestWebsubRocks103ResubscribeBeforeExpiry(t *testing.T) {
	r := newRocksRun(t, "text/html", "<p>first</p>")
	r.subscribe(t, nil)
	r.subscribe(t, nil) // again, before expiry: 202 and a second verification
	if n := len(r.sub.verifications()); n != 2 {
		t.Fatalf("%d verifications, want 2", n)
	}
	if n := len(r.th.Subscriptions(r.topic)); n != 1 {
		t.Fatalf("%d subscriptions after re-subscribing, want 1", n)
	}
	r.publish(t, "<p>post</p>")
	rocksCheckDelivery(t, r.waitDeliveries(t, 1)[0], r.rt, r.th.URL, "")
	r.quiet(t, 1) // a second notification would be a duplicate subscription
}

func TestWebsubRocks104Unsubscription(t *testing.T) {
	r := newRocksRun(t, "text/html", "<p>first</p>")
	r.subscribe(t, nil)
	r.publish(t, "<p>post</p>")
	rocksCheckDelivery(t, r.waitDeliveries(t, 1)[0], r.rt, r.th.URL, "")
	code, msg := r.th.post(t, url.Values{"hub.mode": {"unsubscribe"}, "hub.topic": {r.topic}, "hub.callback": {r.cb}})
	if code != http.StatusAccepted {
		t.Fatalf("unsubscribe answered %d: %s", code, msg)
	}
	r.th.waitNoPending(t)
	v := r.sub.verifications()
	last := v[len(v)-1]
	if last.Query.Get("hub.mode") != "unsubscribe" || last.Query.Get("hub.lease_seconds") == "" {
		t.Fatalf("unsubscribe verification: %s", last.RawQuery)
	}
	if n := len(r.th.Subscriptions(r.topic)); n != 0 {
		t.Fatalf("%d subscriptions after unsubscribing", n)
	}
	r.publish(t, "<p>after unsubscribing</p>")
	r.quiet(t, 1)
}

func TestWebsubRocks105PlaintextTopic(t *testing.T) {
	r := newRocksRun(t, "text/plain", "first\n")
	r.subscribe(t, nil)
	r.publish(t, "a plain text post\n")
	d := r.waitDeliveries(t, 1)
	rocksCheckDelivery(t, d[0], r.rt, r.th.URL, "")
	if d[0].Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("Content-Type re-serialised: %q", d[0].Header.Get("Content-Type"))
	}
}

func TestWebsubRocks106JSONTopic(t *testing.T) {
	r := newRocksRun(t, "application/json", `{"posts":[]}`)
	r.subscribe(t, nil)
	r.publish(t, `{"posts":[{"content":"hello"}]}`)
	d := r.waitDeliveries(t, 1)
	rocksCheckDelivery(t, d[0], r.rt, r.th.URL, "")
}
