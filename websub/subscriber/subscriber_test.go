package subscriber

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rs"
)

func payload1() []byte {
	return cnPayload("2026-11-22T08:00:00Z", "2026-11-22T08:01:00Z", "http://example.com/a", "http://example.com/b")
}

// verifyGet sends a hand-made verification GET to the callback.
func verifyGet(t *testing.T, c *http.Client, cb string, q url.Values) (int, string) {
	t.Helper()
	h := &testHub{t: t, client: c}
	return h.get(cb, q)
}

func TestSubscribeVerified(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.LeaseSeconds = 3600; c.Secret = []byte("s3cret") })
	f.hub.set(func(h *testHub) { h.lease = "1800" })
	if err := f.sub.Subscribe(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	reqs := f.hub.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	form := reqs[0].form
	for k, want := range map[string]string{
		"hub.mode": "subscribe", "hub.topic": testTopic, "hub.callback": f.cb.URL,
		"hub.lease_seconds": "3600", "hub.secret": "s3cret",
	} {
		if got := form.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	v := f.hub.waitVerifications(1)
	if len(v) != 1 || !v[0].echoed || v[0].status != http.StatusOK {
		t.Fatalf("verification %+v", v)
	}
	st := f.sub.State()
	if !st.Active || st.Lease != 1800*time.Second {
		t.Fatalf("state %+v: want active with the granted lease", st)
	}
}

// A verification GET is confirmed only for the configured topic and a
// pending (or, for subscribe, active) request of that mode (WS-SUB-6).
func TestVerificationRefused(t *testing.T) {
	f := newFixture(t, nil)
	ch := "abc123"
	get := func(mode, topic string) int {
		q := url.Values{"hub.mode": {mode}, "hub.topic": {topic}, "hub.challenge": {ch}, "hub.lease_seconds": {"100"}}
		st, _ := verifyGet(t, f.c, f.cb.URL, q)
		return st
	}
	// Nothing pending yet.
	for _, m := range []string{"subscribe", "unsubscribe", "denied", "foo", ""} {
		if st := get(m, testTopic); st != http.StatusNotFound {
			t.Errorf("mode %q with nothing pending: %d, want 404", m, st)
		}
	}
	if err := f.sub.Subscribe(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if st := get("subscribe", testTopic+"?invalid"); st != http.StatusNotFound {
		t.Errorf("unknown topic: %d, want 404", st)
	}
	if st := get("subscribe", "http://other.example/topic"); st != http.StatusNotFound {
		t.Errorf("other topic: %d, want 404", st)
	}
	if st := get("unsubscribe", testTopic); st != http.StatusNotFound {
		t.Errorf("unsubscribe not pending: %d, want 404", st)
	}
	if st := get("denied", testTopic+"x"); st != http.StatusNotFound || f.sub.State().Denied {
		t.Errorf("denial of another topic: %d", st)
	}
	if st, _ := verifyGet(t, f.c, f.cb.URL, url.Values{"hub.mode": {"subscribe"}, "hub.topic": {testTopic}}); st != http.StatusNotFound {
		t.Errorf("no challenge: %d, want 404", st)
	}
	// The hub may reconfirm an active subscription: echoed, lease updated.
	st, body := verifyGet(t, f.c, f.cb.URL, url.Values{"hub.mode": {"subscribe"}, "hub.topic": {testTopic}, "hub.challenge": {ch}, "hub.lease_seconds": {"100"}})
	if st != http.StatusOK || body != ch {
		t.Errorf("reconfirmation of the active subscription: %d %q", st, body)
	}
	if l := f.sub.State().Lease; l != 100*time.Second {
		t.Errorf("lease %v after reconfirmation", l)
	}
	if st := get("subscribe", testTopic); st != http.StatusOK {
		t.Errorf("active: %d", st)
	}
}

func TestSignatureAlgorithms(t *testing.T) {
	secret := []byte("a secret of moderate length")
	f := newFixture(t, func(c *Config) { c.Secret = secret })
	if err := f.sub.Subscribe(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for i, alg := range []string{"sha1", "sha256", "sha384", "sha512"} {
		p := cnPayload("2026-11-22T08:00:00Z", "2026-11-22T08:01:00Z", "http://example.com/"+alg)
		sig, err := Sign(alg, secret, p)
		if err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			sig = alg + "=" + strings.ToUpper(strings.TrimPrefix(sig, alg+"=")) // hex of either case
		}
		if st := deliver(t, f.c, f.cb.URL, p, sig, ""); st != http.StatusOK {
			t.Fatalf("%s: %d", alg, st)
		}
		if n := f.notes.next(t); n.Entries[0].Loc != "http://example.com/"+alg {
			t.Fatalf("%s: delivered %s", alg, n.Entries[0].Loc)
		}
	}
	p := payload1()
	good, _ := Sign("sha256", secret, p)
	other, _ := Sign("sha256", []byte("another secret"), p)
	tampered, _ := Sign("sha256", secret, append([]byte(" "), p...))
	for name, sig := range map[string]string{
		"other secret": other, "signed other bytes": tampered, "unknown alg": "md5=" + good[7:],
		"not hex": "sha256=zz" + good[9:], "no alg": good[7:], "truncated": good[:20],
	} {
		if st := deliver(t, f.c, f.cb.URL, p, sig, ""); st != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, st)
		}
	}
	if st := deliver(t, f.c, f.cb.URL, p, "", ""); st != http.StatusForbidden {
		t.Errorf("unsigned: %d, want 403", st)
	}
	f.notes.none(t)
	// Refused deliveries were not remembered as seen: the good one passes.
	if st := deliver(t, f.c, f.cb.URL, p, good, ""); st != http.StatusOK {
		t.Fatalf("good: %d", st)
	}
	f.notes.next(t)
}

func TestUnsignedRejectedWithSecret(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Secret = NewSecret() })
	if st := deliver(t, f.c, f.cb.URL, payload1(), "", ""); st/100 == 2 {
		t.Fatalf("unsigned delivery: %d, want non-2xx", st)
	}
	f.notes.none(t)
}

func TestUnsignedAcceptedWithoutSecret(t *testing.T) {
	f := newFixture(t, nil)
	if st := deliver(t, f.c, f.cb.URL, payload1(), "", ""); st != http.StatusOK {
		t.Fatalf("%d", st)
	}
	f.notes.next(t)
}

func TestDuplicateDelivery(t *testing.T) {
	f := newFixture(t, nil)
	p := payload1()
	// Same X-Hub-Delivery-Id (a hub's retry).
	for range 3 {
		if st := deliver(t, f.c, f.cb.URL, p, "", "topic1-42"); st != http.StatusOK {
			t.Fatalf("%d", st)
		}
	}
	n := f.notes.next(t)
	if n.DeliveryID != "topic1-42" {
		t.Fatalf("delivery id %q", n.DeliveryID)
	}
	// Same bytes without an id, or under another id: the digest matches.
	deliver(t, f.c, f.cb.URL, p, "", "")
	deliver(t, f.c, f.cb.URL, p, "", "topic1-43")
	f.notes.none(t)
	// Without ids: by digest.
	p2 := cnPayload("2026-11-22T08:01:00Z", "2026-11-22T08:02:00Z", "http://example.com/c")
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); deliver(t, f.c, f.cb.URL, p2, "", "") }()
	}
	wg.Wait()
	if n := f.notes.next(t); !strings.HasPrefix(n.DeliveryID, "sha256:") {
		t.Fatalf("id %q", n.DeliveryID)
	}
	f.notes.none(t)
	if c := f.notes.count(); c != 2 {
		t.Fatalf("%d notifications, want 2", c)
	}
}

func TestPayloadRejected(t *testing.T) {
	f := newFixture(t, nil)
	head := `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">`
	for name, body := range map[string]string{
		"empty":            "",
		"not xml":          "hello",
		"html":             blogHTML,
		"truncated":        string(payload1()[:200]),
		"changelist":       head + `<rs:md capability="changelist" from="2026-01-01T00:00:00Z" until="2026-01-02T00:00:00Z"/></urlset>`,
		"no until":         head + `<rs:md capability="change-notification" from="2026-01-01T00:00:00Z"/></urlset>`,
		"no from":          head + `<rs:md capability="change-notification" until="2026-01-01T00:00:00Z"/></urlset>`,
		"until<from":       head + `<rs:md capability="change-notification" from="2026-01-02T00:00:00Z" until="2026-01-01T00:00:00Z"/></urlset>`,
		"entry w/o change": head + `<rs:md capability="change-notification" from="2026-01-01T00:00:00Z" until="2026-01-02T00:00:00Z"/><url><loc>http://e.com/a</loc><rs:md/></url></urlset>`,
		"sitemapindex": `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">` +
			`<rs:md capability="change-notification" from="2026-01-01T00:00:00Z" until="2026-01-02T00:00:00Z"/></sitemapindex>`,
		"doctype": `<!DOCTYPE x [<!ENTITY a "aaaa">]>` + string(payload1()),
	} {
		if st := deliver(t, f.c, f.cb.URL, []byte(body), "", ""); st != http.StatusOK {
			t.Errorf("%s: %d, want 200 (acknowledged and dropped)", name, st)
		}
	}
	f.notes.none(t)
}

func TestPayloadTooLarge(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.MaxPayloadBytes = 1024 })
	big := cnPayload("2026-11-22T08:00:00Z", "2026-11-22T08:01:00Z", strings.Repeat("http://example.com/x ", 1))
	big = append(big, []byte(strings.Repeat(" ", 1100))...)
	if st := deliver(t, f.c, f.cb.URL, big, "", ""); st != http.StatusRequestEntityTooLarge {
		t.Fatalf("%d, want 413", st)
	}
	f.notes.none(t)
}

// Deliveries reach OnNotification one at a time, in order of arrival,
// after the hub had its answer.
func TestNotificationsSerialised(t *testing.T) {
	var inside, maxInside atomic.Int32
	got := make(chan string, 100)
	release := make(chan struct{})
	f := newFixture(t, func(c *Config) {
		c.OnNotification = func(ctx context.Context, n Notification) error {
			if v := inside.Add(1); v > maxInside.Load() {
				maxInside.Store(v)
			}
			<-release
			time.Sleep(time.Millisecond)
			inside.Add(-1)
			got <- n.Entries[0].Loc
			return errors.New("handler errors are logged, not fatal")
		}
	})
	base := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	var want []string
	for i := range 20 {
		from := rs.NewTime(base.Add(time.Duration(i) * time.Minute)).String()
		until := rs.NewTime(base.Add(time.Duration(i+1) * time.Minute)).String()
		loc := "http://example.com/" + string(rune('a'+i))
		want = append(want, loc)
		// The handler is blocked: answers come back anyway (quick 2xx).
		if st := deliver(t, f.c, f.cb.URL, cnPayload(from, until, loc), "", ""); st != http.StatusOK {
			t.Fatalf("%d", st)
		}
	}
	close(release)
	for i := range want {
		select {
		case loc := <-got:
			if loc != want[i] {
				t.Fatalf("notification %d is %s, want %s", i, loc, want[i])
			}
		case <-time.After(5 * time.Second):
			t.Fatal("timeout")
		}
	}
	if m := maxInside.Load(); m != 1 {
		t.Fatalf("%d concurrent OnNotification calls", m)
	}
}

func TestQueueFull(t *testing.T) {
	block := make(chan struct{})
	f := newFixture(t, func(c *Config) {
		c.QueueSize = 1
		c.OnNotification = func(ctx context.Context, n Notification) error {
			select {
			case <-block:
			case <-ctx.Done():
			}
			return nil
		}
	})
	defer close(block)
	codes := map[int]int{}
	for i := range 4 {
		p := cnPayload("2026-11-22T08:00:00Z", "2026-11-22T08:01:00Z", "http://example.com/"+string(rune('a'+i)))
		codes[deliver(t, f.c, f.cb.URL, p, "", "")]++
	}
	if codes[http.StatusServiceUnavailable] == 0 {
		t.Fatalf("answers %v: want 503 once the queue is full", codes)
	}
}

// Run renews the subscription before the granted lease expires.
func TestLeaseRenewal(t *testing.T) {
	f := newFixture(t, nil)
	f.hub.set(func(h *testHub) { h.lease = "1" }) // 1 s lease: renewal at 0.8 s
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() { done <- f.sub.Run(ctx) }()
	deadline := time.After(5 * time.Second)
	for len(f.hub.verifications()) < 3 {
		select {
		case <-f.hub.changed:
		case <-deadline:
			t.Fatalf("only %d verifications", len(f.hub.verifications()))
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	reqs, vs := f.hub.requests(), f.hub.verifications()
	for i := 1; i < 3; i++ {
		lease := time.Second
		if gap := reqs[i].at.Sub(vs[i-1].at); gap >= lease || gap < lease/2 {
			t.Errorf("renewal %d sent %v after the verification, want within (0.5, 1) × lease", i, gap)
		}
		if reqs[i].form.Get("hub.mode") != "subscribe" {
			t.Errorf("renewal %d mode %q", i, reqs[i].form.Get("hub.mode"))
		}
	}
}

// Run with a fake clock: the renewal is computed from Now.
func TestLeaseRenewalFakeClock(t *testing.T) {
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	f := newFixture(t, func(c *Config) { c.Now = now })
	f.hub.set(func(h *testHub) { h.lease = "864000" }) // 10 days
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.sub.Run(ctx) }()
	<-f.hub.changed
	time.Sleep(50 * time.Millisecond)
	if n := len(f.hub.requests()); n != 1 {
		t.Fatalf("%d requests before the clock moved", n)
	}
	// 9 days later the lease is past 80 %: any wake-up renews. A state
	// change (a reconfirmation by the hub) wakes Run.
	offset.Store(int64(9 * 24 * time.Hour))
	verifyGet(t, f.c, f.cb.URL, url.Values{"hub.mode": {"subscribe"}, "hub.topic": {testTopic}, "hub.challenge": {"x"}, "hub.lease_seconds": {"60"}})
	// Reconfirmed with 60 s at the shifted clock: renewal due in 48 s, so
	// nothing yet; shift past it and wake Run again.
	offset.Store(int64(9*24*time.Hour + 50*time.Second))
	verifyGet(t, f.c, f.cb.URL, url.Values{"hub.mode": {"subscribe"}, "hub.topic": {testTopic}, "hub.challenge": {"y"}, "hub.lease_seconds": {"1"}})
	select {
	case <-f.hub.changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no renewal")
	}
	if n := len(f.hub.requests()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	cancel()
	<-done
}

// While the hub is unreachable Run retries with backoff and reports the
// hub down; when it comes back, up.
func TestHubDownRetries(t *testing.T) {
	type state struct {
		up  bool
		err error
	}
	states := make(chan state, 100)
	f := newFixture(t, func(c *Config) {
		c.OnHubState = func(up bool, err error) { states <- state{up, err} }
	})
	f.hub.set(func(h *testHub) { h.down = 4 })
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() { done <- f.sub.Run(ctx) }()
	s1 := <-states
	if s1.up || s1.err == nil {
		t.Fatalf("first state %+v, want down with an error", s1)
	}
	var s2 state
	select {
	case s2 = <-states:
	case <-time.After(5 * time.Second):
		t.Fatal("hub never reported up")
	}
	if !s2.up {
		t.Fatalf("second state %+v", s2)
	}
	if n := len(f.hub.requests()); n != 5 {
		t.Fatalf("%d requests, want 4 failed and 1 good", n)
	}
	// The hub goes away again; the lease expires (1 s) and Run reports down.
	f.hub.set(func(h *testHub) { h.always = true })
	verifyGet(t, f.c, f.cb.URL, url.Values{"hub.mode": {"subscribe"}, "hub.topic": {testTopic}, "hub.challenge": {"x"}, "hub.lease_seconds": {"1"}})
	select {
	case s3 := <-states:
		if s3.up {
			t.Fatalf("third state %+v", s3)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("hub down not reported")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
}

func TestSubscribeHubError(t *testing.T) {
	f := newFixture(t, nil)
	f.hub.set(func(h *testHub) { h.status = http.StatusForbidden })
	err := f.sub.Subscribe(ctxT(t))
	var he *HubError
	if !errors.As(err, &he) || he.Status != http.StatusForbidden || !strings.Contains(he.Body, "refused by test hub") {
		t.Fatalf("%v", err)
	}
}

func TestSubscribeNotVerified(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.VerifyTimeout = 100 * time.Millisecond })
	f.hub.set(func(h *testHub) { h.noVerify = true })
	if err := f.sub.Subscribe(ctxT(t)); !errors.Is(err, ErrNotVerified) {
		t.Fatalf("%v", err)
	}
	// No longer pending: a late verification is refused.
	st, _ := verifyGet(t, f.c, f.cb.URL, url.Values{"hub.mode": {"subscribe"}, "hub.topic": {testTopic}, "hub.challenge": {"x"}, "hub.lease_seconds": {"60"}})
	if st != http.StatusNotFound {
		t.Fatalf("late verification: %d", st)
	}
}

func TestDenied(t *testing.T) {
	f := newFixture(t, nil)
	f.hub.set(func(h *testHub) { h.deny = "topic not served here" })
	err := f.sub.Subscribe(ctxT(t))
	var de *DeniedError
	if !errors.Is(err, ErrDenied) || !errors.As(err, &de) || de.Reason != "topic not served here" {
		t.Fatalf("%v", err)
	}
	if err := f.sub.Run(ctxT(t)); !errors.Is(err, ErrDenied) {
		t.Fatalf("Run: %v", err)
	}
	if st := deliver(t, f.c, f.cb.URL, payload1(), "", ""); st != http.StatusGone {
		t.Fatalf("delivery after denial: %d, want 410", st)
	}
}

// A denial may come at any time, even for an active subscription: Run
// stops and reports the hub down.
func TestDeniedLater(t *testing.T) {
	states := make(chan bool, 10)
	f := newFixture(t, func(c *Config) {
		c.OnHubState = func(up bool, err error) { states <- up }
	})
	done := make(chan error, 1)
	go func() { done <- f.sub.Run(ctxT(t)) }()
	if up := <-states; !up {
		t.Fatal("first state down")
	}
	st, _ := verifyGet(t, f.c, f.cb.URL, url.Values{"hub.mode": {"denied"}, "hub.topic": {testTopic}, "hub.reason": {"banned"}})
	if st != http.StatusOK {
		t.Fatalf("denial answered %d", st)
	}
	if err := <-done; !errors.Is(err, ErrDenied) {
		t.Fatalf("Run: %v", err)
	}
	if up := <-states; up {
		t.Fatal("second state up")
	}
	if st := f.sub.State(); !st.Denied || st.Reason != "banned" || st.Active {
		t.Fatalf("state %+v", st)
	}
}

func TestUnsubscribe(t *testing.T) {
	f := newFixture(t, nil)
	done := make(chan error, 1)
	go func() { done <- f.sub.Run(ctxT(t)) }()
	<-f.hub.changed
	for !f.sub.State().Active {
		time.Sleep(time.Millisecond)
	}
	if st := deliver(t, f.c, f.cb.URL, payload1(), "", ""); st != http.StatusOK {
		t.Fatalf("%d", st)
	}
	f.notes.next(t)
	if err := f.sub.Unsubscribe(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run after Unsubscribe: %v", err)
	}
	reqs := f.hub.requests()
	last := reqs[len(reqs)-1].form
	if last.Get("hub.mode") != "unsubscribe" || last.Get("hub.topic") != testTopic || last.Get("hub.callback") != f.cb.URL || last.Has("hub.secret") {
		t.Fatalf("unsubscribe request %v", last)
	}
	// The hub records its verification after the answer: wait for it.
	vs := f.hub.verifications()
	for vs[len(vs)-1].mode != "unsubscribe" {
		<-f.hub.changed
		vs = f.hub.verifications()
	}
	if v := vs[len(vs)-1]; v.mode != "unsubscribe" || !v.echoed {
		t.Fatalf("unsubscribe verification %+v", v)
	}
	if st := f.sub.State(); st.Active || !st.Unsubbed {
		t.Fatalf("state %+v", st)
	}
	// Deliveries after the unsubscription: 410 Gone, not delivered.
	p := cnPayload("2026-11-22T08:01:00Z", "2026-11-22T08:02:00Z", "http://example.com/z")
	if st := deliver(t, f.c, f.cb.URL, p, "", ""); st != http.StatusGone {
		t.Fatalf("%d, want 410", st)
	}
	f.notes.none(t)
	// A verification for a subscription nobody asked for is refused.
	st, _ := verifyGet(t, f.c, f.cb.URL, url.Values{"hub.mode": {"subscribe"}, "hub.topic": {testTopic}, "hub.challenge": {"x"}, "hub.lease_seconds": {"60"}})
	if st != http.StatusNotFound {
		t.Fatalf("%d", st)
	}
}

func TestNewValidates(t *testing.T) {
	ok := Config{Hub: "http://127.0.0.1/hub", Topic: "http://127.0.0.1/t", CallbackURL: "http://127.0.0.1/cb"}
	for name, mod := range map[string]func(*Config){
		"no hub":       func(c *Config) { c.Hub = "" },
		"relative":     func(c *Config) { c.Topic = "/t" },
		"ftp callback": func(c *Config) { c.CallbackURL = "ftp://x/cb" },
		"long secret":  func(c *Config) { c.Secret = make([]byte, 200) },
		"lease":        func(c *Config) { c.LeaseSeconds = -1 },
	} {
		c := ok
		mod(&c)
		if s, err := New(c); err == nil {
			s.Close()
			t.Errorf("%s: accepted", name)
		}
	}
	c := ok
	c.Secret = make([]byte, 199)
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.Subscribe(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestNewSecret(t *testing.T) {
	a, b := NewSecret(), NewSecret()
	if len(a) != 64 || string(a) == string(b) {
		t.Fatalf("%s %s", a, b)
	}
}

func TestChannels(t *testing.T) {
	doc := `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:ln rel="up" href="http://example.com/.well-known/resourcesync"/>
<rs:md capability="capabilitylist"/>
<url><loc>http://example.com/resourcelist.xml</loc><rs:md capability="resourcelist"/></url>
<url><loc>http://example.com/notify/changes</loc><rs:ln rel="hub" href="http://hub.example.com/"/><rs:md capability="change-notification"/></url>
<url><loc>http://example.com/notify/framework</loc><rs:ln rel="hub" href="http://hub.example.com/"/><rs:md capability="framework-notification"/></url>
<url><loc>http://example.com/notify/nohub</loc><rs:md capability="change-notification"/></url>
</urlset>`
	d := rs.NewDecoder(strings.NewReader(doc))
	var es []rs.Entry
	for e, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, *e)
	}
	got := Channels(es)
	want := []Channel{
		{rs.CapChangeNotification, "http://example.com/notify/changes", "http://hub.example.com/"},
		{rs.CapFrameworkNotification, "http://example.com/notify/framework", "http://hub.example.com/"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("%+v", got)
	}
}

func TestDiscoverErrors(t *testing.T) {
	c, _ := testnet.Client(t)
	srv := newRocks(t).srv
	mux := http.NewServeMux()
	mux.HandleFunc("/two-selves", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Link", `<http://127.0.0.1/a>; rel="self", <http://127.0.0.1/b>; rel="self", <http://127.0.0.1/h>; rel="hub"`)
	})
	mux.HandleFunc("/nothing", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(blogHTML))
	})
	mux.HandleFunc("/combined", func(w http.ResponseWriter, r *http.Request) {
		// One rel token list and a relative reference (WS-DISC-5).
		w.Header().Add("Link", `</hub>; rel="hub self"`)
	})
	srv.Config.Handler = mux
	if _, err := Discover(ctxT(t), c, srv.URL+"/two-selves"); !errors.Is(err, ErrManySelf) {
		t.Errorf("two selves: %v", err)
	}
	if _, err := Discover(ctxT(t), c, srv.URL+"/nothing"); !errors.Is(err, ErrNoHub) {
		t.Errorf("nothing: %v", err)
	}
	if _, err := Discover(ctxT(t), c, srv.URL+"/missing"); err == nil {
		t.Errorf("404: no error")
	}
	d, err := Discover(ctxT(t), c, srv.URL+"/combined")
	if err != nil || d.Topic != srv.URL+"/hub" || len(d.Hubs) != 1 || d.Hubs[0] != srv.URL+"/hub" {
		t.Errorf("combined: %+v %v", d, err)
	}
}

// A hub that confirms without hub.lease_seconds (it MUST send one) gets
// the requested lease assumed.
func TestMissingLeaseFallback(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.LeaseSeconds = 600 })
	f.hub.set(func(h *testHub) { h.lease = "" })
	if err := f.sub.Subscribe(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if st := f.sub.State(); !st.Active || st.Lease != 600*time.Second || st.Expires.IsZero() {
		t.Fatalf("state %+v", st)
	}
	f.hub.set(func(h *testHub) { h.lease = "-5" })
	if err := f.sub.Subscribe(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if st := f.sub.State(); st.Lease != 600*time.Second {
		t.Fatalf("state %+v", st)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	f := newFixture(t, nil)
	req, _ := http.NewRequest(http.MethodPut, f.cb.URL, nil)
	resp, err := f.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("%d", resp.StatusCode)
	}
}

func TestSeenIsBounded(t *testing.T) {
	s := &Subscriber{seen: map[string]bool{}}
	for i := range maxSeen + 10 {
		s.markLocked(fmt.Sprint("k", i))
	}
	if len(s.seen) != maxSeen || s.seenLocked("k0", "k9") || !s.seenLocked("k10") || !s.seenLocked(fmt.Sprint("k", maxSeen+9)) {
		t.Fatalf("seen set: %d keys", len(s.seen))
	}
}

func TestNotificationInterval(t *testing.T) {
	f := newFixture(t, nil)
	deliver(t, f.c, f.cb.URL, payload1(), "", "")
	n := f.notes.next(t)
	if n.From().String() != "2026-11-22T08:00:00Z" || n.Until().String() != "2026-11-22T08:01:00Z" || n.Topic != testTopic || n.Received.IsZero() {
		t.Fatalf("%s %s %s", n.From(), n.Until(), n.Topic)
	}
}

func TestSameURL(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"http://e.com/~a", "http://e.com/%7Ea", true},
		{"http://e.com/%7ea", "http://e.com/~a", true},
		{"http://e.com/%41", "http://e.com/A", true},
		{"http://e.com/a%2Fb", "http://e.com/a/b", false}, // reserved: significant
		{"http://e.com/a", "http://e.com/a/", false},
		{"http://e.com/a?x=1&y=2", "http://e.com/a?y=2&x=1", false},
		{"http://e.com/%", "http://e.com/%", true},
		{"http://e.com/%7", "http://e.com/~", false},
	} {
		if got := sameURL(tc.a, tc.b); got != tc.want {
			t.Errorf("sameURL(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}
