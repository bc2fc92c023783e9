package hub

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/hubstoreurl"
)

// Config configures a Hub. Zero values take the defaults named below.
type Config struct {
	// StateDir holds the state file (hub.db). Required unless Store is set.
	StateDir string
	// Store is the hub's state. Nil: the embedded store (bbolt) at
	// StateDir/hub.db, opened by Open and closed by Close. A Store passed
	// here is the caller's (Close does not close it). Several hubs
	// ("nodes") may share one state, each through its own Store handle:
	// each delivers only the subscriptions it has claimed (see
	// package hubstore).
	Store hubstore.Store
	// Node names this hub among the nodes sharing the state (default:
	// host name, process id and a random suffix). The hub claims work
	// in the store as Node plus a suffix of its own, so that two
	// processes given the same name by mistake are still two nodes (each
	// subscription delivered by one of them), not one delivering twice.
	Node string
	// ClaimTTL is how long a node's claims on subscriptions and
	// verification jobs last unless renewed (default 6s); a node renews
	// them every ClaimTTL/3, so after a node dies its work resumes on
	// another node within about ClaimTTL. A node that could not renew
	// stops delivering ClaimTTL/4 before its claims may pass to another.
	ClaimTTL time.Duration
	// URL is the hub's public URL, sent as rel="hub" on deliveries. When
	// empty, a fat ping's rel="hub" link (or the request URL) is used.
	URL string

	// Leases (WS-HUB-18, WS-HUB-19): requested leases are clamped to
	// [LeaseMin, LeaseMax]; LeaseDefault when none is requested.
	// Defaults 10 days, 5 minutes, 30 days.
	LeaseDefault, LeaseMin, LeaseMax time.Duration

	// AllowPrivateCallbacks lets callbacks and topic fetches reach
	// loopback, private and link-local addresses (tests, intranets).
	AllowPrivateCallbacks bool
	// PublishToken, if set, is required as "Authorization: Bearer <token>"
	// on every publish, fat pings (WS-SEC-5) and thin pings alike (a thin
	// ping without it would let anyone make the hub fetch and fan out).
	PublishToken string
	// SubscriberAuth, if set, is asked first about every subscription
	// request (subscribe and unsubscribe): false refuses it, the function
	// having answered it (e.g. 401). Publishes are PublishToken's to
	// check; deliveries to callbacks are outbound and unaffected.
	SubscriberAuth func(w http.ResponseWriter, r *http.Request) bool
	// TopicAllowed, if set, decides which topics may be subscribed and
	// published (the embedded hub accepts only its Source's channels).
	TopicAllowed func(topic string) bool
	// OnPublished, if set, is called with every notification this node
	// appended (not with other nodes' of a cluster), after the append is
	// committed: the standalone hub's live push (package wspush) sends it
	// on over WebSocket. It must not block.
	OnPublished func(topic, contentType string, body []byte)

	// PublishRate bounds publish requests over HTTP (per second, default
	// 100, bursts of as many); beyond it the hub answers 429 with
	// Retry-After. In-process Publish is not limited.
	PublishRate float64

	// MaxPayloadBytes bounds a fat ping and a fetched topic (default 8 MiB;
	// at most MaxPayloadLimit).
	MaxPayloadBytes int64
	// MaxSubscriptionsPerTopic (default 10,000).
	MaxSubscriptionsPerTopic int
	// MaxPendingVerifications bounds the verification jobs waiting (default
	// 10,000); MaxPendingPerHost those for one callback host and port
	// (default 100), so that the hub cannot be used to flood a victim with
	// GETs (WS-SEC-4) and one abusive subscriber does not use up the
	// allowance of another on the same host; the global bound caps a
	// flood spread over many ports.
	MaxPendingVerifications, MaxPendingPerHost int
	// MaxConcurrentPerHost bounds deliveries in flight to one callback
	// host (default 64); MaxConcurrentDeliveries bounds all of them
	// (default 512). Each host keeps as many idle connections for reuse.
	// 64, not fewer: one host may well have thousands of subscriptions
	// (one per feed or user), and a fan-out to them takes their number
	// times the round trip over this limit (10,000 at 5 ms: under 1 s);
	// not more, so that one host takes at most an eighth of the global
	// bound and no subscriber host gets a flood of connections.
	MaxConcurrentPerHost, MaxConcurrentDeliveries int

	// RetrySchedule is the delay before retry n (the last value repeats);
	// each delay gets jitter (between half and all of it). Default 10s,
	// 30s, 1m, 5m, 15m, 1h, 3h, 6h, 12h, 24h. A delivery failing for
	// GiveUpAfter (default 48h) goes to the dead-letter store.
	RetrySchedule []time.Duration
	GiveUpAfter   time.Duration
	// VerifyRetrySchedule: delays between verification attempts after a
	// transport error or 5xx (default 30s, 1m, 2m, 4m; then it fails).
	VerifyRetrySchedule []time.Duration

	// ConnectTimeout (default 5s) and RequestTimeout (default 30s) bound
	// every outbound request (WS-HUB-29).
	ConnectTimeout, RequestTimeout time.Duration
	// FlushInterval is how often advanced cursors are persisted (default
	// 100ms): the most a crash can make the hub redeliver. With many
	// subscriptions a flush itself takes time (one record written per
	// advanced cursor), so the next flush starts no sooner than
	// flushCostFactor times the last one's duration after it: flushing
	// then costs at most about a tenth of the time, and the redelivery
	// window grows with the number of subscriptions this way (e.g.
	// 10,000 cursors flushed in 30 ms: one flush every 300 ms).
	FlushInterval time.Duration
	// SweepInterval is how often expired leases are swept and the logs
	// pruned (default 1m).
	SweepInterval time.Duration

	// LookupIP resolves host names for outbound requests (default
	// net.DefaultResolver). Tests set it so that no DNS query is sent.
	LookupIP func(ctx context.Context, host string) ([]net.IP, error)
	// DialControl, if set, runs after the hub's own address check in
	// net.Dialer.Control, on the address actually dialled (tests record
	// and refuse anything outside 127.0.0.0/8 there).
	DialControl func(network, address string, c syscall.RawConn) error
	// SignatureAlg is the X-Hub-Signature algorithm: sha256 (default),
	// sha1, sha384 or sha512.
	SignatureAlg string
	// RootCAs are the certificate authorities trusted for HTTPS callbacks
	// and topics (default: the system's): subscribers inside an
	// organisation often present certificates of a private CA. Over TLS
	// the deliveries to a host share HTTP/2 connections where the
	// subscriber offers h2 (ALPN), HTTP/1.1 kept-alive ones otherwise.
	RootCAs *x509.CertPool
	// NoSync skips fsync on commit (benchmarks only).
	NoSync bool

	Now    func() time.Time
	Logger *slog.Logger
}

// MaxPayloadLimit is the largest MaxPayloadBytes: a payload is held in
// memory whole, and a larger bound would overflow the readers' limits.
const MaxPayloadLimit = 1 << 30

func (c *Config) defaults() error {
	if c.StateDir == "" && c.Store == nil {
		return errors.New("hub: Config.StateDir (or Config.Store) is required")
	}
	if c.Node == "" {
		host, _ := os.Hostname()
		c.Node = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), challenge()[:8])
	}
	d := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	d(&c.LeaseDefault, 10*24*time.Hour)
	d(&c.LeaseMin, 5*time.Minute)
	d(&c.LeaseMax, 30*24*time.Hour)
	if c.LeaseMax < c.LeaseMin {
		return fmt.Errorf("hub: LeaseMax %v < LeaseMin %v", c.LeaseMax, c.LeaseMin)
	}
	c.LeaseDefault = min(max(c.LeaseDefault, c.LeaseMin), c.LeaseMax)
	if c.MaxPayloadBytes <= 0 {
		c.MaxPayloadBytes = 8 << 20
	}
	if c.MaxPayloadBytes > MaxPayloadLimit {
		return fmt.Errorf("hub: MaxPayloadBytes %d is over %d (1 GiB): a payload is held in memory", c.MaxPayloadBytes, int64(MaxPayloadLimit))
	}
	if c.MaxSubscriptionsPerTopic <= 0 {
		c.MaxSubscriptionsPerTopic = 10000
	}
	if c.PublishRate <= 0 {
		c.PublishRate = 100
	}
	if c.MaxPendingVerifications <= 0 {
		c.MaxPendingVerifications = 10000
	}
	if c.MaxPendingPerHost <= 0 {
		c.MaxPendingPerHost = 100
	}
	if c.MaxConcurrentPerHost <= 0 {
		c.MaxConcurrentPerHost = 64
	}
	if c.MaxConcurrentDeliveries <= 0 {
		c.MaxConcurrentDeliveries = 512
	}
	if len(c.RetrySchedule) == 0 {
		c.RetrySchedule = []time.Duration{10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute,
			15 * time.Minute, time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}
	}
	d(&c.GiveUpAfter, 48*time.Hour)
	if len(c.VerifyRetrySchedule) == 0 {
		c.VerifyRetrySchedule = []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute}
	}
	d(&c.ConnectTimeout, 5*time.Second)
	d(&c.RequestTimeout, 30*time.Second)
	d(&c.FlushInterval, 100*time.Millisecond)
	d(&c.SweepInterval, time.Minute)
	d(&c.ClaimTTL, 6*time.Second)
	switch c.SignatureAlg {
	case "":
		c.SignatureAlg = "sha256"
	case "sha1", "sha256", "sha384", "sha512":
	default:
		return fmt.Errorf("hub: unknown SignatureAlg %q", c.SignatureAlg)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return nil
}

// Hub is a WebSub hub. Open it, serve ServeHTTP, and call Run to verify
// and deliver.
type Hub struct {
	cfg      Config
	st       hubstore.Store
	ownStore bool // opened by Open, closed by Close
	node     string
	log      *slog.Logger
	client   *http.Client // verification and delivery: no redirects
	fetch    *http.Client // thin-ping topic fetch: at most 3 redirects
	tr       *http.Transport
	m        *metrics

	mu      sync.Mutex
	topics  map[string]*topicState
	subs    map[string]*sub // by subscription key
	runCtx  context.Context // set while Run runs
	runWG   sync.WaitGroup
	hostSem map[string]*hostSlots

	hqMu   sync.Mutex
	hostQs map[string]*hostQueue // delivery queues by callback host

	workMu       sync.Mutex
	workWG       sync.WaitGroup // the delivery workers
	workStopping bool
	global       chan struct{}

	cache   *entryCache
	pubRate *rate.Limiter

	verifyWake chan struct{}
	claimWake  chan struct{}
	closeOnce  sync.Once

	claimMu    sync.Mutex // one claim round at a time
	lastNodes  int        // from the last claim round (claimMu)
	lastTotal  int
	leaseUntil atomic.Int64 // wall-clock ns until which this node's claims are surely live
	nodes      atomic.Int32 // lastNodes, for the admin pages (without claimMu)
}

type topicState struct {
	// head is the last committed seq (as far as this node knows):
	// written under h.mu, read without it by every delivery goroutine of
	// the topic, so that a fan-out to many subscriptions does not
	// serialise on h.mu.
	head atomic.Uint64
	subs map[string]*sub // the subscriptions this node holds
}

// Open opens (or creates) the hub's state: cfg.Store, or the embedded
// store in cfg.StateDir.
func Open(cfg Config) (*Hub, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	st, own := cfg.Store, false
	if st == nil {
		// The embedded store in StateDir, through the store registry (as
		// --store DIR opens it).
		bs, err := hubstoreurl.Local(cfg.StateDir).OpenWith(context.Background(), &hubstoreurl.Options{NoSync: cfg.NoSync})
		if errors.Is(err, hubstore.ErrLocked) {
			return nil, fmt.Errorf("hub: %s is held open by another process", filepath.Join(cfg.StateDir, hubstoreurl.FileName))
		}
		if err != nil {
			return nil, fmt.Errorf("hub: open state: %w", err)
		}
		st, own = bs, true
	}
	h := &Hub{
		cfg: cfg, st: st, ownStore: own, node: cfg.Node + "~" + challenge()[:6], log: cfg.Logger,
		topics:     map[string]*topicState{},
		subs:       map[string]*sub{},
		hostSem:    map[string]*hostSlots{},
		hostQs:     map[string]*hostQueue{},
		global:     make(chan struct{}, cfg.MaxConcurrentDeliveries),
		cache:      newEntryCache(64 << 20),
		verifyWake: make(chan struct{}, 1),
		claimWake:  make(chan struct{}, 1),
		pubRate:    rate.NewLimiter(rate.Limit(cfg.PublishRate), max(1, int(cfg.PublishRate))),
		lastNodes:  1,
	}
	h.m = newMetrics(h)
	h.tr = &http.Transport{
		Proxy:               nil, // a proxy would bypass the address check
		DialContext:         h.dialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: cfg.MaxConcurrentPerHost,
		// And no more open: a worker starts its next delivery as soon as
		// its last answer is read, often before the transport has put
		// that connection back; without the cap it would dial another.
		MaxConnsPerHost:       cfg.MaxConcurrentPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   cfg.ConnectTimeout,
		ResponseHeaderTimeout: cfg.RequestTimeout,
		// Over TLS, h2 where the subscriber offers it: one connection
		// carries the host's deliveries at once. Plain http:// stays on
		// HTTP/1.1 (no server offers h2c unasked).
		ForceAttemptHTTP2: true,
		TLSClientConfig:   &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
	}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	h.client = &http.Client{Transport: h.tr, CheckRedirect: noRedirect, Timeout: cfg.RequestTimeout}
	h.fetch = &http.Client{Transport: h.tr, Timeout: cfg.RequestTimeout, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if len(via) > 3 {
			return errors.New("hub: more than 3 redirects")
		}
		if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
			return errors.New("hub: redirect to a non-HTTP URL")
		}
		return nil
	}}
	if err := h.loadHeads(context.Background()); err != nil {
		if own {
			st.Close()
		}
		return nil, err
	}
	return h, nil
}

// loadHeads reads the topic heads (appends by any node) and wakes the
// subscriptions of topics that moved.
func (h *Hub) loadHeads(ctx context.Context) error {
	heads, err := h.st.Heads(ctx)
	if err != nil {
		return fmt.Errorf("hub: reading topic heads: %w", err)
	}
	var wake []*sub
	h.mu.Lock()
	for topic, head := range heads {
		ts := h.topic(topic)
		if head > ts.head.Load() {
			ts.head.Store(head)
			for _, s := range ts.subs {
				wake = append(wake, s)
			}
		}
	}
	h.mu.Unlock()
	for _, s := range wake {
		s.wake()
	}
	return nil
}

// topic returns the state of topic, creating it. h.mu must be held (or
// the hub not yet shared).
func (h *Hub) topic(t string) *topicState {
	ts := h.topics[t]
	if ts == nil {
		ts = &topicState{subs: map[string]*sub{}}
		h.topics[t] = ts
	}
	return ts
}

// Metrics returns the Prometheus handler for the hub's own registry.
func (h *Hub) Metrics() http.Handler { return h.m.handler() }

// Registry returns the hub's Prometheus registry (to gather or combine).
func (h *Hub) Registry() *prometheus.Registry { return h.m.reg }

// Run starts the verification and delivery workers, the cursor flusher
// and the lease sweeper, and returns when ctx is done and they stopped.
func (h *Hub) Run(ctx context.Context) error {
	h.mu.Lock()
	if h.runCtx != nil {
		h.mu.Unlock()
		return errors.New("hub: Run called twice")
	}
	h.runCtx = ctx
	h.mu.Unlock()

	// Watch before the first claim round, so that no change between the
	// two is missed.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	events, err := h.st.Watch(wctx)
	if err != nil {
		h.mu.Lock()
		h.runCtx = nil
		h.mu.Unlock()
		return fmt.Errorf("hub: watching the state: %w", err)
	}
	h.claim(ctx)
	h.runWG.Add(5)
	go func() { defer h.runWG.Done(); h.watch(ctx, events) }()
	go func() { defer h.runWG.Done(); h.leaseWatch(ctx) }()
	go func() { defer h.runWG.Done(); h.claimer(ctx) }()
	go func() { defer h.runWG.Done(); h.verifier(ctx) }()
	go func() { defer h.runWG.Done(); h.housekeeping(ctx) }()
	<-ctx.Done()
	h.runWG.Wait()
	h.stopWorkers()
	// A clean stop: persist the cursors, then hand the claims over at
	// once (a crash leaves them to expire).
	h.flush()
	if err := h.st.Release(context.Background(), h.node); err != nil && !errors.Is(err, hubstore.ErrClosed) {
		h.log.Error("releasing claims", "err", err)
	}
	h.mu.Lock()
	h.runCtx = nil
	for _, s := range h.subs {
		h.removeSubLocked(s)
	}
	h.mu.Unlock()
	return nil
}

// flushCostFactor: the time between two flushes is at least this many
// times the last flush's duration (see Config.FlushInterval).
const flushCostFactor = 10

func (h *Hub) housekeeping(ctx context.Context) {
	flush := time.NewTimer(h.cfg.FlushInterval)
	defer flush.Stop()
	sweep := time.NewTicker(h.cfg.SweepInterval)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-flush.C:
			start := time.Now()
			h.flush()
			took := time.Since(start)
			flush.Reset(max(h.cfg.FlushInterval-took, flushCostFactor*took))
		case <-sweep.C:
			h.sweep(ctx)
		}
	}
}

// Close persists the cursors and closes the state (unless it was passed
// in Config.Store). Call it after Run has returned.
func (h *Hub) Close() error {
	var err error
	h.closeOnce.Do(func() {
		h.flush()
		h.tr.CloseIdleConnections()
		if h.ownStore {
			err = h.st.Close()
		}
	})
	return err
}

func (h *Hub) now() time.Time { return h.cfg.Now() }

// Stats is a snapshot for tests and admin pages.
type Stats struct {
	Subscriptions        int // all nodes'
	PendingVerifications int
	DeadLetters          int
	Node                 string // this hub's node name
	Held                 int    // subscriptions this node delivers (holds the claims of)
}

// Stats counts subscriptions, pending verifications and dead letters
// (of all nodes sharing the state).
func (h *Hub) Stats() Stats {
	c, err := h.st.Counts(context.Background())
	if err != nil {
		h.log.Error("counting", "err", err)
	}
	h.mu.Lock()
	held := len(h.subs)
	h.mu.Unlock()
	return Stats{Subscriptions: c.Subscriptions, PendingVerifications: c.Jobs, DeadLetters: c.DeadLetters, Node: h.node, Held: held}
}

// Subscription describes an active subscription (secrets omitted).
type Subscription struct {
	Topic, Callback string
	Expires         time.Time
	Cursor          uint64
	HasSecret       bool
}

// Subscriptions lists the active subscriptions of topic ("" for all),
// of all nodes sharing the state; the cursors of those this node
// delivers are as in memory (ahead of the stored ones by at most
// FlushInterval).
func (h *Hub) Subscriptions(topic string) []Subscription {
	var out []Subscription
	for r, err := range h.st.Subscriptions(context.Background(), topic) {
		if err != nil {
			h.log.Error("listing subscriptions", "err", err)
			break
		}
		h.mu.Lock()
		if s := h.subs[r.Key]; s != nil {
			s.mu.Lock()
			r.Cursor = max(r.Cursor, s.rec.Cursor)
			s.mu.Unlock()
		}
		h.mu.Unlock()
		out = append(out, Subscription{Topic: r.Topic, Callback: r.Callback, Expires: r.Expires, Cursor: r.Cursor, HasSecret: r.Secret != ""})
	}
	return out
}
