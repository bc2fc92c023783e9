package hub

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// dialGuard is installed as Config.DialControl in every test: it sees
// the address actually dialled, records it, and refuses anything outside
// 127.0.0.0/8 so that no test can send a packet elsewhere.
type dialGuard struct {
	mu      sync.Mutex
	calls   int
	refused []string
}

func (g *dialGuard) control(network, address string, _ syscall.RawConn) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !netip.MustParsePrefix("127.0.0.0/8").Contains(ap.Addr().Unmap()) {
		g.refused = append(g.refused, address)
		return fmt.Errorf("test guard: refused non-loopback %s", address)
	}
	return nil
}

func (g *dialGuard) snapshot() (int, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls, append([]string(nil), g.refused...)
}

// fakeDNS answers from a table and never sends a query.
type fakeDNS struct {
	mu    sync.Mutex
	names map[string][]func() net.IP
	asked []string
}

func (f *fakeDNS) lookup(_ context.Context, host string) ([]net.IP, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, host)
	fs := f.names[strings.ToLower(host)]
	if len(fs) == 0 {
		return nil, fmt.Errorf("fake DNS: no such host %q", host)
	}
	var out []net.IP
	for _, fn := range fs {
		out = append(out, fn())
	}
	return out, nil
}

func (f *fakeDNS) set(host string, ips ...func() net.IP) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.names == nil {
		f.names = map[string][]func() net.IP{}
	}
	f.names[host] = ips
}

func fixed(s string) func() net.IP { return func() net.IP { return net.ParseIP(s) } }

type testHub struct {
	*Hub
	URL    string // hub endpoint
	srv    *httptest.Server
	guard  *dialGuard
	dns    *fakeDNS
	client *http.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// fastConfig shortens every schedule so the tests stay well under a minute.
func fastConfig(dir string) Config {
	return Config{
		StateDir:              dir,
		AllowPrivateCallbacks: true,
		LeaseMin:              time.Second,
		RetrySchedule:         []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond},
		GiveUpAfter:           10 * time.Second,
		VerifyRetrySchedule:   []time.Duration{20 * time.Millisecond, 40 * time.Millisecond},
		RequestTimeout:        5 * time.Second,
		ConnectTimeout:        2 * time.Second,
		FlushInterval:         20 * time.Millisecond,
		SweepInterval:         50 * time.Millisecond,
		NoSync:                true,
	}
}

// newTestHub opens a hub on a loopback listener and runs it until the
// test ends. mod may change the config (it runs after the defaults of
// fastConfig and before Open).
func newTestHub(t *testing.T, mod func(*Config)) *testHub {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	cfg := fastConfig(t.TempDir())
	cfg.URL = "http://" + srv.Listener.Addr().String() + "/"
	th := &testHub{guard: &dialGuard{}, dns: &fakeDNS{}}
	cfg.DialControl = th.guard.control
	cfg.LookupIP = th.dns.lookup
	if mod != nil {
		mod(&cfg)
	}
	h, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	th.Hub, th.srv, th.URL = h, srv, cfg.URL
	srv.Config.Handler = h
	srv.Start()
	th.client, _ = testnet.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	th.cancel, th.done = cancel, make(chan struct{})
	go func() { h.Run(ctx); close(th.done) }()
	t.Cleanup(func() {
		th.stop()
		srv.Close()
		h.Close()
		if _, refused := th.guard.snapshot(); len(refused) > 0 {
			t.Errorf("the hub dialled non-loopback addresses: %v", refused)
		}
	})
	return th
}

func (th *testHub) stop() {
	th.cancel()
	<-th.done
}

// post sends a form to the hub and returns status and body.
func (th *testHub) post(t *testing.T, form url.Values) (int, string) {
	t.Helper()
	resp, err := th.client.PostForm(th.URL, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// fatPing publishes body to topic the ResourceSync way.
func (th *testHub) fatPing(t *testing.T, topic, ct string, body []byte, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, th.URL, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", ct)
	req.Header.Add("Link", "<"+topic+`>; rel="self"`)
	req.Header.Add("Link", "<"+th.URL+`>; rel="hub"`)
	for k, v := range hdr {
		req.Header.Add(k, v)
	}
	resp, err := th.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (th *testHub) mustPublish(t *testing.T, topic, body string) {
	t.Helper()
	if code, msg := th.fatPing(t, topic, "application/xml", []byte(body), nil); code != http.StatusAccepted {
		t.Fatalf("publish: %d %s", code, msg)
	}
}

// verification is one verification GET seen by a subscriber.
type verification struct {
	Query    url.Values
	RawQuery string
	Path     string
}

// delivery is one POST seen by a subscriber.
type delivery struct {
	Body   string
	Header http.Header
	URL    string
}

// subscriber is a loopback callback server. By default it confirms every
// verification and answers 204 to deliveries.
type subscriber struct {
	srv *httptest.Server
	mu  sync.Mutex
	ver []verification
	got []delivery
	// verify, if set, answers a verification GET.
	verify func(w http.ResponseWriter, r *http.Request)
	// status, if set, gives the status of delivery n (0-based).
	status   func(n int, d delivery) int
	attempts atomic.Int32 // delivery POSTs, whatever the answer
	inflight atomic.Int32
	maxInfl  atomic.Int32
	delay    time.Duration
	notify   chan struct{}
}

func newSubscriber(t *testing.T) *subscriber {
	s := &subscriber{notify: make(chan struct{}, 1)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		// The hub may hold a dialled but unused connection, which Close
		// would wait for.
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

func (s *subscriber) serve(w http.ResponseWriter, r *http.Request) {
	defer func() {
		select {
		case s.notify <- struct{}{}:
		default:
		}
	}()
	if r.Method == http.MethodGet {
		s.mu.Lock()
		s.ver = append(s.ver, verification{Query: r.URL.Query(), RawQuery: r.URL.RawQuery, Path: r.URL.Path})
		f := s.verify
		s.mu.Unlock()
		if f != nil {
			f(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		io.WriteString(w, r.URL.Query().Get("hub.challenge"))
		return
	}
	n := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	for {
		m := s.maxInfl.Load()
		if n <= m || s.maxInfl.CompareAndSwap(m, n) {
			break
		}
	}
	// Read first: only then does the server notice (in the background)
	// that the hub closed the connection, and cancel r.Context().
	b, _ := io.ReadAll(r.Body)
	if s.delay > 0 {
		t := time.NewTimer(s.delay)
		select {
		case <-t.C:
		case <-r.Context().Done(): // the hub gave up the request: not received
			t.Stop()
			return
		}
	}
	d := delivery{Body: string(b), Header: r.Header.Clone(), URL: r.URL.String()}
	s.mu.Lock()
	idx := int(s.attempts.Load())
	st := s.status
	s.mu.Unlock()
	code := http.StatusNoContent
	if st != nil {
		code = st(idx, d)
	}
	s.attempts.Add(1)
	if code >= 200 && code < 300 {
		s.mu.Lock()
		s.got = append(s.got, d)
		s.mu.Unlock()
	}
	w.WriteHeader(code)
}

func (s *subscriber) url(path string) string { return s.srv.URL + path }

func (s *subscriber) verifications() []verification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]verification(nil), s.ver...)
}

func (s *subscriber) deliveries() []delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]delivery(nil), s.got...)
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// subscribe subscribes callback to topic and waits until the hub has
// the active subscription.
func (th *testHub) subscribe(t *testing.T, topic, callback string, extra url.Values) {
	t.Helper()
	form := url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic}, "hub.callback": {callback}}
	for k, v := range extra {
		form[k] = v
	}
	code, msg := th.post(t, form)
	if code != http.StatusAccepted {
		t.Fatalf("subscribe: %d %s", code, msg)
	}
	th.waitActive(t, topic, callback)
}

func (th *testHub) waitActive(t *testing.T, topic, callback string) {
	t.Helper()
	waitFor(t, 5*time.Second, "subscription "+callback, func() bool {
		for _, s := range th.Subscriptions(topic) {
			if s.Callback == callback {
				return true
			}
		}
		return false
	})
}

// waitIdle waits until no verification is pending.
func (th *testHub) waitNoPending(t *testing.T) {
	t.Helper()
	waitFor(t, 5*time.Second, "verifications to finish", func() bool { return th.Stats().PendingVerifications == 0 })
}
