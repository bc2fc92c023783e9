package subscriber

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
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

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// cnPayload is a change notification for [from, until] with one entry per loc.
func cnPayload(from, until string, locs ...string) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:ln rel="up" href="http://example.com/capabilitylist.xml"/>
<rs:md capability="change-notification" from="` + from + `" until="` + until + `"/>
`)
	for _, l := range locs {
		fmt.Fprintf(&b, "<url><loc>%s</loc><rs:md change=\"updated\" datetime=\"%s\"/></url>\n", l, until)
	}
	b.WriteString("</urlset>\n")
	return b.Bytes()
}

// callback is an httptest server whose handler is set once the Subscriber exists.
type callback struct {
	srv *httptest.Server
	h   atomic.Pointer[http.Handler]
	URL string // the callback URL, with its own query string
}

func newCallback(t *testing.T) *callback {
	cb := &callback{}
	cb.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := cb.h.Load()
		if h == nil {
			http.Error(w, "no handler yet", http.StatusServiceUnavailable)
			return
		}
		(*h).ServeHTTP(w, r)
	}))
	t.Cleanup(cb.srv.Close)
	cb.URL = cb.srv.URL + "/cb/" + randHex(8) + "?client=test"
	return cb
}

func (cb *callback) set(h http.Handler) { cb.h.Store(&h) }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// notes collects what OnNotification received.
type notes struct {
	mu sync.Mutex
	ns []Notification
	ch chan Notification
}

func newNotes() *notes { return &notes{ch: make(chan Notification, 1000)} }

func (n *notes) on(_ context.Context, x Notification) error {
	n.mu.Lock()
	n.ns = append(n.ns, x)
	n.mu.Unlock()
	n.ch <- x
	return nil
}

func (n *notes) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.ns)
}

// next waits for one notification.
func (n *notes) next(t *testing.T) Notification {
	t.Helper()
	select {
	case x := <-n.ch:
		return x
	case <-time.After(5 * time.Second):
		t.Fatal("no notification delivered")
	}
	return Notification{}
}

// none checks that nothing is delivered for a short while.
func (n *notes) none(t *testing.T) {
	t.Helper()
	select {
	case x := <-n.ch:
		t.Fatalf("unexpected notification %s", x.DeliveryID)
	case <-time.After(100 * time.Millisecond):
	}
}

// testHub is a small hand-written WebSub hub: it answers subscription
// requests, verifies intent asynchronously (or denies), and delivers.
type testHub struct {
	t      *testing.T
	srv    *httptest.Server
	client *http.Client

	mu       sync.Mutex
	status   int    // answer to (un)subscription requests; default 202
	lease    string // granted hub.lease_seconds; default "86400"
	deny     string // if set, deny with this reason instead of verifying
	noVerify bool   // accept but never verify
	down     int    // drop the connection of the next down requests
	always   bool   // drop every connection while set
	reqs     []hubReq
	verifies []verifyResult
	callback string
	secret   string
	changed  chan struct{}
}

type hubReq struct {
	at   time.Time
	form url.Values
}

type verifyResult struct {
	mode   string
	status int
	echoed bool
	at     time.Time
}

func newTestHub(t *testing.T) *testHub {
	c, _ := testnet.Client(t)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	h := &testHub{t: t, client: c, status: http.StatusAccepted, lease: "86400", changed: make(chan struct{}, 100)}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *testHub) URL() string { return h.srv.URL + "/hub" }

func (h *testHub) set(f func(h *testHub)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

func (h *testHub) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	if h.down > 0 || h.always {
		if h.down > 0 {
			h.down--
		}
		h.reqs = append(h.reqs, hubReq{at: time.Now()})
		h.mu.Unlock()
		hj, ok := w.(http.Hijacker)
		if ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	h.mu.Unlock()
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	_ = r.ParseForm()
	form := r.PostForm
	h.mu.Lock()
	h.reqs = append(h.reqs, hubReq{at: time.Now(), form: form})
	status, lease, deny, noVerify := h.status, h.lease, h.deny, h.noVerify
	h.callback = form.Get("hub.callback")
	if form.Get("hub.mode") == "subscribe" {
		h.secret = form.Get("hub.secret")
	}
	h.mu.Unlock()
	if status != http.StatusAccepted {
		http.Error(w, "refused by test hub", status)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	if noVerify {
		return
	}
	go func() {
		if deny != "" {
			h.get(form.Get("hub.callback"), url.Values{"hub.mode": {"denied"}, "hub.topic": {form.Get("hub.topic")}, "hub.reason": {deny}})
			return
		}
		h.verify(form.Get("hub.callback"), form.Get("hub.mode"), form.Get("hub.topic"), lease)
	}()
}

// verify sends a verification GET and records the outcome.
func (h *testHub) verify(cb, mode, topic, lease string) verifyResult {
	ch := randHex(16)
	q := url.Values{"hub.mode": {mode}, "hub.topic": {topic}, "hub.challenge": {ch}}
	if lease != "" {
		q.Set("hub.lease_seconds", lease)
	}
	status, body := h.get(cb, q)
	res := verifyResult{mode: mode, status: status, echoed: status/100 == 2 && body == ch, at: time.Now()}
	h.mu.Lock()
	h.verifies = append(h.verifies, res)
	h.mu.Unlock()
	h.changed <- struct{}{}
	return res
}

// get sends a GET to the callback with params appended to its query.
func (h *testHub) get(cb string, q url.Values) (int, string) {
	u := appendQuery(cb, q)
	resp, err := h.client.Get(u)
	if err != nil {
		h.t.Errorf("hub GET callback: %v", err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func appendQuery(cb string, q url.Values) string {
	sep := "?"
	if strings.Contains(cb, "?") {
		sep = "&"
	}
	return cb + sep + q.Encode()
}

// deliver POSTs a payload to the callback; sig is the X-Hub-Signature
// value ("" for none), id the X-Hub-Delivery-Id ("" for none).
func deliver(t *testing.T, c *http.Client, cb string, body []byte, sig, id string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, cb, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/xml")
	req.Header.Set("Link", `<http://example.com/topic>; rel="self", <http://example.com/hub>; rel="hub"`)
	if sig != "" {
		req.Header.Set("X-Hub-Signature", sig)
	}
	if id != "" {
		req.Header.Set("X-Hub-Delivery-Id", id)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("deliver: %v", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func (h *testHub) requests() []hubReq {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hubReq(nil), h.reqs...)
}

// waitVerifications waits until the hub has recorded n verifications.
func (h *testHub) waitVerifications(n int) []verifyResult {
	h.t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		if v := h.verifications(); len(v) >= n {
			return v
		}
		select {
		case <-h.changed:
		case <-deadline:
			h.t.Fatalf("hub recorded %d verifications, want %d", len(h.verifications()), n)
		}
	}
}

func (h *testHub) verifications() []verifyResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]verifyResult(nil), h.verifies...)
}

// fixture: a hub, a callback server and a Subscriber wired together.
type fixture struct {
	hub   *testHub
	cb    *callback
	sub   *Subscriber
	notes *notes
	c     *http.Client
}

const testTopic = "http://127.0.0.1:1/rs/changenotification/set1"

func newFixture(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	f := &fixture{hub: newTestHub(t), cb: newCallback(t), notes: newNotes()}
	f.c, _ = testnet.Client(t)
	cfg := Config{
		Hub:            f.hub.URL(),
		Topic:          testTopic,
		CallbackURL:    f.cb.URL,
		Client:         f.c,
		OnNotification: f.notes.on,
		VerifyTimeout:  5 * time.Second,
		RetryMin:       10 * time.Millisecond,
		RetryMax:       50 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f.sub = s
	f.cb.set(s.Handler())
	return f
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var _ = strconv.Itoa
