package subscriber

// One test per subscriber check of websub.rocks (WEBSUB.md §2.3), against
// a hand-written stand-in for websub.rocks on 127.0.0.1: it serves the
// numbered topics and plays their hub the way websub.rocks does
// (synchronous verification, 202 or 400 with an error name, deliveries with
// one combined Link header and X-Hub-Signature sha256 when a secret was
// given). Not reproduced: its refusal of IP-literal callback hosts ("No DNS
// entry"), since tests may only use loopback addresses.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

type rocks struct {
	t      *testing.T
	srv    *httptest.Server
	client *http.Client

	mu       sync.Mutex
	cb       map[string]string // num -> active callback
	secret   map[string]string
	verifyAt map[string]int // num -> status of the last verification GET
	errors   []string
}

const rocksToken = "tok123"

func newRocks(t *testing.T) *rocks {
	c, _ := testnet.Client(t)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	r := &rocks{t: t, client: c, cb: map[string]string{}, secret: map[string]string{}, verifyAt: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /blog/{num}/{token}", r.topic)
	mux.HandleFunc("HEAD /blog/{num}/{token}", r.topic)
	mux.HandleFunc("POST /blog/{num}/{token}/hub", r.hub)
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *rocks) topicURL(num string) string { return r.srv.URL + "/blog/" + num + "/" + rocksToken }
func (r *rocks) hubURL(num string) string   { return r.topicURL(num) + "/hub" }

// self is the rel=self websub.rocks advertises for a test, which the hub
// expects as hub.topic.
func (r *rocks) self(num string) string {
	switch num {
	case "200":
		return r.topicURL(num) + "?self=other"
	case "201", "202":
		return r.topicURL(num) + "?redirect=complete"
	}
	return r.topicURL(num)
}

const blogHTML = `<!doctype html><html><head><title>websub.rocks blog</title></head><body><h1>Post</h1><p>Hello</p></body></html>`

func (r *rocks) topic(w http.ResponseWriter, req *http.Request) {
	num := req.PathValue("num")
	topic, hub := r.topicURL(num), r.hubURL(num)
	links := func(self, hub string) {
		w.Header().Add("Link", "<"+hub+`>; rel="hub"`)
		w.Header().Add("Link", "<"+self+`>; rel="self"`)
	}
	switch num {
	case "100", "205", "300", "301", "302":
		links(topic, hub)
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, blogHTML)
	case "101":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><meta charset="utf-8"><title>t</title>
<link rel="hub" href="%s"><link rel="self" href="%s"></head>
<body><p>A comment: <link rel="hub" href="http://127.0.0.1:1/injected"></p></body></html>`, hub, topic)
	case "102", "104":
		ct := "text/xml"
		if req.Method == http.MethodHead {
			ct = "application/atom+xml"
		}
		bodyHub := hub
		if num == "104" {
			links(topic, hub)
			bodyHub = hub + "?error=wrongtag"
		}
		w.Header().Set("Content-Type", ct)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>websub.rocks</title>
<link rel="hub" href="%s"/><link rel="self" href="%s"/>
<entry><title>Post</title><link rel="self" href="%s/entry/1"/></entry></feed>`, bodyHub, topic, topic)
	case "103":
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprintf(w, `<?xml version="1.0"?>
<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom"><channel><title>websub.rocks</title>
<link>%s</link><atom:link rel="hub" href="%s"/><atom:link rel="self" href="%s" type="application/rss+xml"/>
<item><title>Post</title></item></channel></rss>`, topic, hub, topic)
	case "200":
		links(r.self(num), hub)
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, blogHTML)
	case "201", "202":
		if req.URL.Query().Get("redirect") != "complete" {
			code := http.StatusFound
			if num == "202" {
				code = http.StatusMovedPermanently
			}
			http.Redirect(w, req, topic+"?redirect=complete", code)
			return
		}
		links(r.self(num), hub)
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, blogHTML)
	case "203", "204":
		links(topic, hub+"?redirect=true")
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, blogHTML)
	default:
		http.NotFound(w, req)
	}
}

func (r *rocks) fail(w http.ResponseWriter, code string) {
	r.mu.Lock()
	r.errors = append(r.errors, code)
	r.mu.Unlock()
	http.Error(w, code, http.StatusBadRequest)
}

// hub checks a subscription request the way websub.rocks does and verifies
// it synchronously.
func (r *rocks) hub(w http.ResponseWriter, req *http.Request) {
	num := req.PathValue("num")
	q := req.URL.Query()
	if q.Get("error") == "wrongtag" {
		r.fail(w, "wrong_discovery_priority")
		return
	}
	if q.Get("redirect") == "true" {
		code := http.StatusTemporaryRedirect
		if num == "204" {
			code = http.StatusPermanentRedirect
		}
		w.Header().Set("Location", r.hubURL(num))
		w.WriteHeader(code)
		return
	}
	if err := req.ParseForm(); err != nil {
		r.fail(w, "bad_request")
		return
	}
	f := req.PostForm
	mode := f.Get("hub.mode")
	if mode != "subscribe" && mode != "unsubscribe" {
		r.fail(w, "invalid_mode")
		return
	}
	cb, topic := f.Get("hub.callback"), f.Get("hub.topic")
	if cb == "" || topic == "" {
		r.fail(w, "missing_parameters")
		return
	}
	if u, err := url.Parse(cb); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		r.fail(w, "invalid_callback")
		return
	}
	if topic != r.self(num) {
		r.fail(w, "invalid_topic")
		return
	}
	if len(f.Get("hub.secret")) > 200 {
		r.fail(w, "invalid_secret")
		return
	}
	vt := topic
	if num == "205" {
		vt = topic + "?invalid"
	}
	challenge := randHex(16)
	resp, err := r.client.Get(appendQuery(cb, url.Values{
		"hub.mode": {mode}, "hub.topic": {vt}, "hub.challenge": {challenge}, "hub.lease_seconds": {"86400"},
	}))
	if err != nil {
		r.fail(w, "verification_failed")
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.mu.Lock()
	r.verifyAt[num] = resp.StatusCode
	r.mu.Unlock()
	if resp.StatusCode/100 != 2 || string(body) != challenge {
		r.fail(w, "verification_failed")
		return
	}
	r.mu.Lock()
	if mode == "subscribe" {
		r.cb[num], r.secret[num] = cb, f.Get("hub.secret")
	} else {
		delete(r.cb, num)
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

type sigMode int

const (
	sigGood sigMode = iota
	sigCorrupt
	sigNone
)

// deliver posts body to test num's callback as websub.rocks does and
// returns the status.
func (r *rocks) deliver(num, contentType string, body []byte, sm sigMode) int {
	r.t.Helper()
	r.mu.Lock()
	cb, secret := r.cb[num], r.secret[num]
	r.mu.Unlock()
	if cb == "" {
		r.t.Fatalf("test %s: no active subscription", num)
	}
	req, _ := http.NewRequest(http.MethodPost, cb, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Link", "<"+r.self(num)+`>; rel="self", <`+r.hubURL(num)+`>; rel="hub"`)
	if secret != "" && sm != sigNone {
		sig, _ := Sign("sha256", []byte(secret), body)
		if sm == sigCorrupt {
			sig = sig[:len(sig)-4] + "0000"
			if strings.HasSuffix(sig, "00000") {
				sig = sig[:len(sig)-4] + "1111"
			}
		}
		req.Header.Set("X-Hub-Signature", sig)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		r.t.Fatalf("deliver: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// rocksSub discovers test num's topic and makes a Subscriber for it.
func rocksSub(t *testing.T, r *rocks, num string, mod func(*Config)) (*Subscriber, *notes, error) {
	t.Helper()
	c, _ := testnet.Client(t)
	d, err := Discover(ctxT(t), c, r.topicURL(num))
	if err != nil {
		t.Fatalf("discover: %v", err)
	}
	cb := newCallback(t)
	n := newNotes()
	cfg := Config{
		Hub: d.Hubs[0], Topic: d.Topic, CallbackURL: cb.URL, Client: c,
		OnNotification: n.on, VerifyTimeout: 5 * time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cb.set(s.Handler())
	return s, n, s.Subscribe(ctxT(t))
}

// rocksPass runs a discovery/subscription test that must end with an
// active subscription and no hub error.
func rocksPass(t *testing.T, num string) *Subscriber {
	t.Helper()
	r := newRocks(t)
	s, _, err := rocksSub(t, r, num, nil)
	if err != nil {
		t.Fatalf("test %s: subscribe: %v (hub errors %v)", num, err, r.errors)
	}
	if !s.State().Active {
		t.Fatalf("test %s: subscription not active", num)
	}
	if len(r.errors) > 0 {
		t.Fatalf("test %s: hub errors %v", num, r.errors)
	}
	return s
}

func TestWebsubRocks_100_HTTPHeaderDiscovery(t *testing.T) { rocksPass(t, "100") }

func TestWebsubRocks_101_HTMLTagDiscovery(t *testing.T) {
	r := newRocks(t)
	c, _ := testnet.Client(t)
	d, err := Discover(ctxT(t), c, r.topicURL("101"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Hubs) != 1 || d.Topic != r.topicURL("101") {
		t.Fatalf("discovered %+v: links in <body> must be ignored (WS-DISC-3)", d)
	}
	rocksPass(t, "101")
}

func TestWebsubRocks_102_AtomFeedDiscovery(t *testing.T) { rocksPass(t, "102") }

func TestWebsubRocks_103_RSSFeedDiscovery(t *testing.T) { rocksPass(t, "103") }

func TestWebsubRocks_104_DiscoveryPriority(t *testing.T) {
	r := newRocks(t)
	c, _ := testnet.Client(t)
	d, err := Discover(ctxT(t), c, r.topicURL("104"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Hubs) != 1 || d.Hubs[0] != r.hubURL("104") {
		t.Fatalf("hubs %v: the Link header's hub must win over the body's", d.Hubs)
	}
	rocksPass(t, "104")
}

func TestWebsubRocks_200_DifferentRelSelf(t *testing.T) {
	s := rocksPass(t, "200")
	if !strings.HasSuffix(s.cfg.Topic, "?self=other") {
		t.Fatalf("subscribed to %s, want the rel=self URL", s.cfg.Topic)
	}
}

func TestWebsubRocks_201_Topic302Redirect(t *testing.T) { rocksPass(t, "201") }

func TestWebsubRocks_202_Topic301Redirect(t *testing.T) { rocksPass(t, "202") }

func TestWebsubRocks_203_Hub307Redirect(t *testing.T) { rocksPass(t, "203") }

func TestWebsubRocks_204_Hub308Redirect(t *testing.T) { rocksPass(t, "204") }

func TestWebsubRocks_205_RejectInvalidTopic(t *testing.T) {
	r := newRocks(t)
	s, _, err := rocksSub(t, r, "205", nil)
	r.mu.Lock()
	got := r.verifyAt["205"]
	r.mu.Unlock()
	if got != http.StatusNotFound {
		t.Fatalf("callback answered %d to a verification for another topic, want exactly 404", got)
	}
	var he *HubError
	if !errors.As(err, &he) || he.Status != http.StatusBadRequest {
		t.Fatalf("Subscribe: %v, want the hub's 400 verification_failed", err)
	}
	if s.State().Active {
		t.Fatal("subscription active after a refused verification")
	}
}

func TestWebsubRocks_300_2xxOnDelivery(t *testing.T) {
	t.Run("change-notification", func(t *testing.T) {
		r := newRocks(t)
		_, n, err := rocksSub(t, r, "300", nil)
		if err != nil {
			t.Fatal(err)
		}
		p := cnPayload("2026-11-22T08:00:00Z", "2026-11-22T08:01:00Z", "http://example.com/a")
		if st := r.deliver("300", "application/xml", p, sigGood); st/100 != 2 {
			t.Fatalf("delivery answered %d, want 2xx", st)
		}
		if got := n.next(t); len(got.Entries) != 1 || !bytes.Equal(got.Raw, p) {
			t.Fatalf("delivered %+v", got)
		}
	})
	t.Run("websub.rocks-html-with-secret", func(t *testing.T) {
		r := newRocks(t)
		_, n, err := rocksSub(t, r, "300", func(c *Config) { c.AnyPayload = true; c.Secret = NewSecret() })
		if err != nil {
			t.Fatal(err)
		}
		if st := r.deliver("300", "text/html", []byte(blogHTML), sigGood); st/100 != 2 {
			t.Fatalf("delivery answered %d, want 2xx", st)
		}
		if got := n.next(t); string(got.Raw) != blogHTML || got.ContentType != "text/html" {
			t.Fatalf("delivered %q %q", got.Raw, got.ContentType)
		}
	})
}

func TestWebsubRocks_301_InvalidSignature(t *testing.T) {
	r := newRocks(t)
	_, n, err := rocksSub(t, r, "301", func(c *Config) { c.Secret = []byte("0123456789abcdefghij") })
	if err != nil {
		t.Fatal(err)
	}
	p := cnPayload("2026-11-22T08:00:00Z", "2026-11-22T08:01:00Z", "http://example.com/a")
	if st := r.deliver("301", "application/xml", p, sigCorrupt); st/100 == 2 {
		t.Fatalf("corrupted signature answered %d, want non-2xx", st)
	}
	n.none(t)
	if st := r.deliver("301", "application/xml", p, sigGood); st/100 != 2 {
		t.Fatalf("good signature answered %d", st)
	}
	n.next(t)
}

func TestWebsubRocks_302_MissingSignature(t *testing.T) {
	r := newRocks(t)
	_, n, err := rocksSub(t, r, "302", func(c *Config) { c.Secret = []byte("0123456789abcdefghij") })
	if err != nil {
		t.Fatal(err)
	}
	p := cnPayload("2026-11-22T08:00:00Z", "2026-11-22T08:01:00Z", "http://example.com/a")
	if st := r.deliver("302", "application/xml", p, sigNone); st/100 == 2 {
		t.Fatalf("missing signature answered %d, want non-2xx", st)
	}
	n.none(t)
}
