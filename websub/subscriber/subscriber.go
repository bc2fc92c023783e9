package subscriber

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/httperr"
	"github.com/resourcesync-go/resourcesync/internal/redact"
	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/rs"
)

// Defaults for the zero fields of Config.
const (
	DefaultMaxPayloadBytes = 16 << 20
	DefaultQueueSize       = 256
	DefaultVerifyTimeout   = 2 * time.Minute
	DefaultRetryMin        = time.Second
	DefaultRetryMax        = 5 * time.Minute
	// DefaultLease is assumed when a hub confirms a subscription without
	// a usable hub.lease_seconds (a hub MUST send one; some do not) and
	// none was requested.
	DefaultLease = 24 * time.Hour
	// RenewFraction of the granted lease elapses before Run renews.
	RenewFraction = 0.8
	// MaxSecretBytes: a secret must be shorter than 200 bytes (WS-HUB-2a).
	MaxSecretBytes = 199
	maxSeen        = 4096
	maxHubBody     = 4 << 10
	userAgent      = "resourcesync-go-websub-subscriber"
)

// Errors.
var (
	// ErrDenied is matched by the error of Subscribe and Run when the hub
	// sent hub.mode=denied; the error is a *DeniedError with the reason.
	ErrDenied = errors.New("subscriber: subscription denied by the hub")
	// ErrNotVerified is matched when the hub accepted a request but did not
	// verify it within VerifyTimeout.
	ErrNotVerified = errors.New("subscriber: hub did not verify the request in time")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("subscriber: closed")
)

// DeniedError reports a hub.mode=denied request for the topic.
type DeniedError struct{ Reason string }

func (e *DeniedError) Error() string {
	if e.Reason == "" {
		return ErrDenied.Error()
	}
	return ErrDenied.Error() + ": " + e.Reason
}

// Is makes errors.Is(err, ErrDenied) true.
func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

// HubError is a hub's answer other than 2xx to a (un)subscription request.
type HubError struct {
	Status int
	Body   string // at most 4 KiB of the answer

	hub string // the URL posted to
}

// Unwrap returns the project's one status error (*httperr.StatusError),
// so that errors.As finds the status as it does for every client here.
func (e *HubError) Unwrap() error {
	return &httperr.StatusError{Method: http.MethodPost, URL: redact.String(e.hub), Code: e.Status, Body: strings.TrimSpace(e.Body)}
}

func (e *HubError) Error() string {
	return fmt.Sprintf("subscriber: hub answered %d: %s", e.Status, strings.TrimSpace(e.Body))
}

// Refused reports whether err, from Subscribe or Run, is the hub refusing
// the subscription request itself rather than being unreachable: an
// answer 4xx (but 408 and 429), such as a hub's for a callback address it
// will not call (loopback or private), or hub.mode=denied. Retrying will
// not help until the hub's settings or the callback change.
func Refused(err error) bool {
	var he *HubError
	if errors.As(err, &he) {
		return he.Status/100 == 4 && he.Status != http.StatusRequestTimeout && he.Status != http.StatusTooManyRequests
	}
	return errors.Is(err, ErrDenied)
}

// Config configures a Subscriber. Hub, Topic and CallbackURL are required.
type Config struct {
	// Hub and Topic: from the Capability List's change-notification entry
	// (its loc and rs:ln rel="hub", see Channels) or from Discover.
	Hub, Topic string
	// CallbackURL is the public URL at which the caller mounts Handler.
	// It should be unguessable and unique to this subscription (WS-SUB-3).
	CallbackURL string
	// Secret, when set, is sent as hub.secret and every delivery must carry
	// a valid X-Hub-Signature (sha1, sha256, sha384 or sha512). At most
	// 199 bytes; NewSecret makes a good one.
	Secret []byte
	// LeaseSeconds is the requested lease (0: let the hub choose).
	LeaseSeconds int
	// Client sends the (un)subscription requests; default http.DefaultClient.
	// It should follow 307/308 redirects (WS-HUB-7), as Go's clients do.
	Client *http.Client
	// OnNotification is called for each accepted delivery, one at a time,
	// in order of arrival, after the hub got its 200. An error is logged;
	// the notification is not offered again (catch up from the Change
	// Lists, see Sequencer).
	OnNotification func(ctx context.Context, n Notification) error
	// OnHubState is called by Run when the hub becomes reachable (up, with
	// an active subscription) or unreachable (err says why): while down,
	// the caller should poll the Change Lists instead.
	OnHubState func(up bool, err error)
	// Capability the payloads must have; default change-notification.
	Capability rs.Capability
	// AnyPayload accepts any payload without parsing it (Notification.Raw
	// only): for generic WebSub topics such as websub.rocks' HTML blog.
	AnyPayload bool

	MaxPayloadBytes int64         // default DefaultMaxPayloadBytes
	QueueSize       int           // deliveries waiting for OnNotification; default 256
	VerifyTimeout   time.Duration // how long Subscribe/Unsubscribe wait for the hub's GET
	RetryMin        time.Duration // Run's first retry delay; default 1 s
	RetryMax        time.Duration // Run's largest retry delay; default 5 min

	Now    func() time.Time
	Logger *slog.Logger
}

// Notification is one accepted delivery.
type Notification struct {
	Topic       string // the configured topic (never taken from the Link header, WS-SUB-11)
	Head        rs.Head
	Entries     []rs.Entry
	Raw         []byte // the payload as delivered
	ContentType string
	// DeliveryID is the hub's X-Hub-Delivery-Id, else "sha256:" and the
	// payload's digest.
	DeliveryID string
	Received   time.Time
}

// From and Until return the notification's interval.
func (n *Notification) From() rs.Time  { return n.Head.MD.From }
func (n *Notification) Until() rs.Time { return n.Head.MD.Until }

// Subscriber is the Destination's WebSub subscriber for one topic.
type Subscriber struct {
	cfg   Config
	log   *slog.Logger
	queue chan Notification
	stop  context.CancelFunc
	done  chan struct{}
	ops   sync.Mutex // serialises Subscribe and Unsubscribe

	mu           sync.Mutex
	changed      chan struct{} // closed and replaced on every state change
	closed       bool
	pendingSub   int
	pendingUnsub int
	active       bool
	verifiedAt   time.Time
	lease        time.Duration
	subVerified  uint64
	unsubDone    uint64
	denials      uint64
	denied       bool
	reason       string
	gone         bool // unsubscribed or denied: deliveries get 410
	want         bool // Run should keep the subscription
	seen         map[string]bool
	seenRing     []string
	seenNext     int
}

// New checks cfg and starts the dispatcher goroutine that calls
// OnNotification; Close stops it.
func New(cfg Config) (*Subscriber, error) {
	for _, f := range []struct{ name, v string }{{"Hub", cfg.Hub}, {"Topic", cfg.Topic}, {"CallbackURL", cfg.CallbackURL}} {
		u, err := url.Parse(f.v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, redact.Error(fmt.Errorf("subscriber: %s %q is not an absolute http(s) URL", f.name, f.v))
		}
	}
	if len(cfg.Secret) > MaxSecretBytes {
		return nil, fmt.Errorf("subscriber: secret of %d bytes; it must be shorter than 200", len(cfg.Secret))
	}
	if cfg.LeaseSeconds < 0 {
		return nil, fmt.Errorf("subscriber: negative LeaseSeconds")
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	if cfg.Capability == "" {
		cfg.Capability = rs.CapChangeNotification
	}
	if cfg.MaxPayloadBytes <= 0 {
		cfg.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.VerifyTimeout <= 0 {
		cfg.VerifyTimeout = DefaultVerifyTimeout
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = DefaultRetryMin
	}
	if cfg.RetryMax < cfg.RetryMin {
		cfg.RetryMax = max(DefaultRetryMax, cfg.RetryMin)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Subscriber{
		cfg:     cfg,
		log:     cfg.Logger.With("topic", cfg.Topic, "hub", cfg.Hub),
		queue:   make(chan Notification, cfg.QueueSize),
		stop:    cancel,
		done:    make(chan struct{}),
		changed: make(chan struct{}),
		seen:    make(map[string]bool),
	}
	go s.dispatch(ctx)
	return s, nil
}

// Close stops accepting deliveries (503) and stops the dispatcher; queued
// notifications not yet handed to OnNotification are dropped. It waits for
// a running OnNotification to return.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.notifyLocked()
	s.mu.Unlock()
	if !already {
		s.stop()
	}
	<-s.done
	return nil
}

func (s *Subscriber) dispatch(ctx context.Context) {
	defer close(s.done)
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-s.queue:
			if ctx.Err() != nil {
				return
			}
			if s.cfg.OnNotification == nil {
				continue
			}
			if err := s.cfg.OnNotification(ctx, n); err != nil {
				s.log.Warn("notification handler failed", "delivery", n.DeliveryID, "err", err)
			}
		}
	}
}

// notifyLocked wakes every waiter; s.mu must be held.
func (s *Subscriber) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// State is a snapshot of the subscription.
type State struct {
	Active   bool          // verified and the lease not yet over
	Lease    time.Duration // granted
	Expires  time.Time     // zero when not active
	Denied   bool
	Reason   string // hub.reason of a denial
	Unsubbed bool   // a verified unsubscription or denial: deliveries get 410
	Verified time.Time
	Pending  bool // a (un)subscription request waits for verification
}

// State returns the current state.
func (s *Subscriber) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := State{
		Active:   s.activeLocked(),
		Lease:    s.lease,
		Denied:   s.denied,
		Reason:   s.reason,
		Unsubbed: s.gone,
		Verified: s.verifiedAt,
		Pending:  s.pendingSub+s.pendingUnsub > 0,
	}
	if st.Active {
		st.Expires = s.verifiedAt.Add(s.lease)
	}
	return st
}

func (s *Subscriber) activeLocked() bool {
	return s.active && s.cfg.Now().Before(s.verifiedAt.Add(s.lease))
}

// Subscribe asks the hub to subscribe the callback to the topic and waits
// until the hub's verification GET has been confirmed by Handler, the hub
// denies the subscription (a *DeniedError), VerifyTimeout passes
// (ErrNotVerified) or ctx ends. A hub answer other than 2xx is a *HubError.
// Subscribing again while active renews the subscription (WS-HUB-9).
func (s *Subscriber) Subscribe(ctx context.Context) error {
	s.ops.Lock()
	defer s.ops.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.pendingSub++
	startV, startD := s.subVerified, s.denials
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.pendingSub--
		s.mu.Unlock()
	}()
	if err := s.post(ctx, "subscribe"); err != nil {
		return err
	}
	return s.wait(ctx, func() (bool, error) {
		if s.denials != startD {
			return true, &DeniedError{Reason: s.reason}
		}
		return s.subVerified != startV, nil
	})
}

// Unsubscribe asks the hub to end the subscription and waits until the
// hub's verification GET for it has been confirmed. From then on
// deliveries are answered 410 Gone and Run returns.
func (s *Subscriber) Unsubscribe(ctx context.Context) error {
	s.ops.Lock()
	defer s.ops.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.pendingUnsub++
	s.want = false
	s.notifyLocked()
	start := s.unsubDone
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.pendingUnsub--
		s.mu.Unlock()
	}()
	if err := s.post(ctx, "unsubscribe"); err != nil {
		return err
	}
	return s.wait(ctx, func() (bool, error) { return s.unsubDone != start, nil })
}

// wait waits until cond (called with s.mu held) reports done.
func (s *Subscriber) wait(ctx context.Context, cond func() (bool, error)) error {
	t := time.NewTimer(s.cfg.VerifyTimeout)
	defer t.Stop()
	for {
		s.mu.Lock()
		done, err := cond()
		ch, closed := s.changed, s.closed
		s.mu.Unlock()
		if done {
			return err
		}
		if closed {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return ErrNotVerified
		}
	}
}

// post sends a (un)subscription request to the hub.
func (s *Subscriber) post(ctx context.Context, mode string) error {
	form := url.Values{}
	form.Set("hub.callback", s.cfg.CallbackURL)
	form.Set("hub.mode", mode)
	form.Set("hub.topic", s.cfg.Topic)
	if mode == "subscribe" {
		if s.cfg.LeaseSeconds > 0 {
			form.Set("hub.lease_seconds", strconv.Itoa(s.cfg.LeaseSeconds))
		}
		if len(s.cfg.Secret) > 0 {
			form.Set("hub.secret", string(s.cfg.Secret))
		}
	}
	// A strings.Reader body lets the client re-post on 307/308.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.Hub, strings.NewReader(form.Encode()))
	if err != nil {
		return redact.Error(fmt.Errorf("subscriber: %w", err))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	req.Header.Set("User-Agent", userAgent)
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return redact.Error(fmt.Errorf("subscriber: %s request to hub: %w", mode, err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxHubBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	// 202 is the answer the spec requires; some hubs verify synchronously
	// and answer 204 or 200. Either way the verification GET decides.
	if resp.StatusCode/100 != 2 {
		return &HubError{Status: resp.StatusCode, Body: string(body), hub: s.cfg.Hub}
	}
	s.log.Debug("hub accepted request", "mode", mode, "status", resp.StatusCode)
	return nil
}

// Run keeps the subscription active until ctx ends, Unsubscribe is called
// (it then returns nil) or the hub denies it (a *DeniedError). It
// subscribes, renews at RenewFraction of each granted lease, and while the
// hub is unreachable or refuses, retries with exponential backoff and full
// jitter between RetryMin and RetryMax. OnHubState hears of every change
// between up and down.
func (s *Subscriber) Run(ctx context.Context) error {
	s.mu.Lock()
	s.want = true
	s.mu.Unlock()
	backoff := s.cfg.RetryMin
	known, up := false, false
	report := func(u bool, err error) {
		if known && u == up {
			return
		}
		known, up = true, u
		switch {
		case u:
			s.log.Info("hub up: subscription active")
		case Refused(err):
			s.log.Warn("hub refused the subscription", "err", err)
		default:
			s.log.Warn("hub down", "err", err)
		}
		if s.cfg.OnHubState != nil {
			s.cfg.OnHubState(u, err)
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.mu.Lock()
		want, denied, reason, closed := s.want, s.denied, s.reason, s.closed
		active := s.activeLocked()
		renewAt := s.verifiedAt.Add(time.Duration(float64(s.lease) * RenewFraction))
		ch := s.changed
		s.mu.Unlock()
		switch {
		case closed:
			return ErrClosed
		case denied:
			err := &DeniedError{Reason: reason}
			report(false, err)
			return err
		case !want:
			return nil
		}
		if active {
			if d := renewAt.Sub(s.cfg.Now()); d > 0 {
				report(true, nil)
				if err := sleep(ctx, d, ch); err != nil {
					return err
				}
				continue
			}
		}
		err := s.Subscribe(ctx)
		if err == nil {
			backoff = s.cfg.RetryMin
			report(true, nil)
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrDenied) {
			report(false, err)
			return err
		}
		if errors.Is(err, ErrClosed) {
			return err
		}
		report(false, err)
		d := retry.FullJitter(backoff)
		s.log.Debug("retrying subscription", "in", d, "err", err)
		s.mu.Lock()
		ch = s.changed
		s.mu.Unlock()
		if err := sleep(ctx, d, ch); err != nil {
			return err
		}
		backoff = min(backoff*2, s.cfg.RetryMax)
	}
}

// sleep waits d, or until ch is closed (a state change), or ctx ends.
func sleep(ctx context.Context, d time.Duration, ch <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	case <-ch:
	}
	return nil
}

// Handler returns the callback's handler: verification and denial GETs
// from the hub, and deliveries.
func (s *Subscriber) Handler() http.Handler { return http.HandlerFunc(s.serve) }

func (s *Subscriber) serve(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.verify(w, r)
	case http.MethodPost:
		s.deliver(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// verify answers a verification of intent or a denial (WS-SUB-6, WS-SUB-7).
func (s *Subscriber) verify(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	mode, topic, challenge := q.Get("hub.mode"), q.Get("hub.topic"), q.Get("hub.challenge")
	if !sameURL(topic, s.cfg.Topic) {
		s.log.Warn("verification refused: unknown topic", "mode", mode, "got", topic)
		http.NotFound(w, r)
		return
	}
	now := s.cfg.Now()
	s.mu.Lock()
	switch {
	case mode == "denied" && (s.pendingSub > 0 || s.want || s.activeLocked()):
		// Accepted only while we want the subscription: a denial of
		// nothing (perhaps forged, WS-SEC-4) is refused below.
		s.denials++
		s.denied, s.reason, s.gone, s.active = true, q.Get("hub.reason"), true, false
		s.notifyLocked()
		s.mu.Unlock()
		s.log.Warn("hub denied the subscription", "reason", q.Get("hub.reason"))
		w.WriteHeader(http.StatusOK)
		return
	case challenge == "":
	case mode == "subscribe" && (s.pendingSub > 0 || s.activeLocked()):
		lease, ok := parseLease(q.Get("hub.lease_seconds"))
		if !ok {
			lease = time.Duration(s.cfg.LeaseSeconds) * time.Second
			if lease == 0 {
				lease = DefaultLease
			}
			s.log.Warn("hub sent no usable hub.lease_seconds; assuming", "lease", lease)
		}
		s.active, s.verifiedAt, s.lease = true, now, lease
		s.gone, s.denied, s.reason = false, false, ""
		s.subVerified++
		s.notifyLocked()
		s.mu.Unlock()
		s.log.Info("subscription verified", "lease", lease)
		writeChallenge(w, challenge)
		return
	case mode == "unsubscribe" && s.pendingUnsub > 0:
		s.active, s.gone = false, true
		s.unsubDone++
		s.notifyLocked()
		s.mu.Unlock()
		s.log.Info("unsubscription verified")
		writeChallenge(w, challenge)
		return
	}
	s.mu.Unlock()
	s.log.Warn("verification refused: nothing pending", "mode", mode)
	http.NotFound(w, r)
}

func writeChallenge(w http.ResponseWriter, challenge string) {
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Content-Length", strconv.Itoa(len(challenge)))
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, challenge)
}

func parseLease(v string) (time.Duration, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 || n > 10*365*24*3600 {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

// deliver handles a content distribution request (WS-SUB-9, WS-SUB-10).
func (s *Subscriber) deliver(w http.ResponseWriter, r *http.Request) {
	received := s.cfg.Now()
	s.mu.Lock()
	closed, gone := s.closed, s.gone
	s.mu.Unlock()
	if closed {
		w.Header().Set("Retry-After", "60")
		http.Error(w, "subscriber closed", http.StatusServiceUnavailable)
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxPayloadBytes+1))
	if err != nil {
		http.Error(w, "reading body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if int64(len(raw)) > s.cfg.MaxPayloadBytes {
		s.log.Warn("delivery refused: too large", "limit", s.cfg.MaxPayloadBytes)
		http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
		return
	}
	if len(s.cfg.Secret) > 0 {
		if err := CheckSignature(s.cfg.Secret, r.Header.Get("X-Hub-Signature"), raw); err != nil {
			// Not processed; 403 also passes websub.rocks 301 and 302.
			s.log.Warn("delivery refused", "err", err)
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
	}
	if gone {
		http.Error(w, "not subscribed", http.StatusGone)
		return
	}
	digest := sha256.Sum256(raw)
	dkey := "sha256:" + hex.EncodeToString(digest[:])
	id := r.Header.Get("X-Hub-Delivery-Id")
	idKey := ""
	if id != "" {
		idKey = "id:" + id
	} else {
		id = dkey
	}
	if s.isSeen(idKey, dkey) {
		s.log.Debug("duplicate delivery ignored", "delivery", id)
		w.WriteHeader(http.StatusOK)
		return
	}
	n := Notification{
		Topic:       s.cfg.Topic,
		Raw:         raw,
		ContentType: r.Header.Get("Content-Type"),
		DeliveryID:  id,
		Received:    received,
	}
	if !s.cfg.AnyPayload {
		head, entries, err := ParsePayload(raw, s.cfg.Capability, s.cfg.MaxPayloadBytes)
		if err != nil {
			// Acknowledged and dropped: a hub retrying it (in order, per
			// subscription) would hold back every later notification for
			// up to 48 hours, and a retry cannot repair it. The changes it
			// carried show up as a gap in from/until, which the caller
			// catches up from the Change Lists.
			s.log.Warn("delivery dropped: not a "+string(s.cfg.Capability), "delivery", id, "err", err)
			w.WriteHeader(http.StatusOK)
			return
		}
		n.Head, n.Entries = *head, entries
	}
	s.mu.Lock()
	if s.seenLocked(idKey, dkey) {
		s.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		return
	}
	select {
	case s.queue <- n:
	default:
		s.mu.Unlock()
		s.log.Warn("delivery refused: queue full", "delivery", id)
		w.Header().Set("Retry-After", "5")
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	s.markLocked(idKey)
	s.markLocked(dkey)
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (s *Subscriber) isSeen(keys ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seenLocked(keys...)
}

func (s *Subscriber) seenLocked(keys ...string) bool {
	for _, k := range keys {
		if k != "" && s.seen[k] {
			return true
		}
	}
	return false
}

// markLocked remembers k among the last maxSeen keys.
func (s *Subscriber) markLocked(k string) {
	if k == "" {
		return
	}
	if len(s.seenRing) < maxSeen {
		s.seenRing = append(s.seenRing, k)
	} else {
		delete(s.seen, s.seenRing[s.seenNext])
		s.seenRing[s.seenNext] = k
		s.seenNext = (s.seenNext + 1) % maxSeen
	}
	s.seen[k] = true
}

// sameURL compares URLs as a hub identifies subscriptions (WS-HUB-8):
// byte for byte after decoding percent-encoded unreserved characters.
func sameURL(a, b string) bool { return a == b || decodeUnreserved(a) == decodeUnreserved(b) }

func decodeUnreserved(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil && isUnreserved(byte(v)) {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}
