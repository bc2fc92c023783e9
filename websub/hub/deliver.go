package hub

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// sub is a subscription this node holds and its delivery state.
//
// A subscription has no goroutine of its own: when it has something to
// deliver it waits in its callback host's queue (hostQueue), whose
// workers (at most MaxConcurrentPerHost) take one delivery step for it at
// a time and queue it again at the back. So 10,000 subscriptions cost
// 10,000 small structs and one timer each, not 10,000 goroutine stacks for
// the garbage collector to scan, a slow host ties up only its own
// workers, and a subscription's notifications still go one at a time and
// in order (busy: at most one step in flight per subscription).
type sub struct {
	key     string
	h       *Hub // set by startSubLocked
	mu      sync.Mutex
	rec     hubstore.Subscription
	dirty   bool // rec's delivery state changed since the last flush
	removed bool
	running bool
	last    time.Time   // when this node last began a delivery attempt (admin pages)
	ts      *topicState // its topic's state (set by adopt; never removed from h.topics)

	// Scheduling state, under mu.
	ctx     context.Context    // ends when the subscription stops here
	stop    context.CancelFunc // stops it: done closes once no step is in flight
	done    chan struct{}
	stopped bool
	queued  bool // waiting in a host queue
	busy    bool // a worker is taking a step for it
	timer   *time.Timer
	timerAt time.Time // when timer fires (zero: not armed)
	hq      *hostQueue
	hqFor   string

	// Used only by the worker holding busy: the callback's host slots,
	// and the keyed hash state of the secret (hmac.New per delivery would
	// allocate and hash the key each time), looked up again only when the
	// callback, secret or algorithm changes.
	semFor string
	sem    *hostSlots
	mac    hash.Hash
	macFor string
}

func newSub(r hubstore.Subscription) *sub {
	return &sub{key: r.Key, rec: r}
}

// wake looks at s again (a publish, a renewal): it is queued for a step
// if it has something to deliver.
func (s *sub) wake() {
	if s.h != nil {
		s.h.schedule(s)
	}
}

// update returns the delivery state to persist.
func (s *sub) update() hubstore.CursorUpdate {
	r := &s.rec
	return hubstore.CursorUpdate{Key: s.key, Cursor: r.Cursor, Attempt: r.Attempt, FirstFail: r.FirstFail, LastError: r.LastError, NextAt: r.NextAt}
}

// startSubLocked starts delivering s if Run is running. h.mu must be
// held.
func (h *Hub) startSubLocked(s *sub) {
	if h.runCtx == nil || h.runCtx.Err() != nil || s.running {
		return
	}
	ctx, cancel := context.WithCancel(h.runCtx)
	done := make(chan struct{})
	s.mu.Lock()
	s.h, s.running, s.ctx, s.done = h, true, ctx, done
	s.stop = func() {
		cancel()
		s.mu.Lock()
		if !s.stopped {
			s.stopped = true
			if s.timer != nil {
				s.timer.Stop()
			}
			if !s.busy {
				close(done)
			}
		}
		s.mu.Unlock()
	}
	s.mu.Unlock()
	h.schedule(s) // takes s.mu and the host queue's lock, never h.mu

}

// removeSubLocked forgets s in memory and stops its delivery (without
// waiting for the step in flight). h.mu must be held; the caller deletes
// the record or has lost the claim.
func (h *Hub) removeSubLocked(s *sub) {
	s.mu.Lock()
	s.removed = true
	stop := s.stop
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	if h.subs[s.key] == s {
		delete(h.subs, s.key)
	}
	if ts := h.topics[s.rec.Topic]; ts != nil && ts.subs[s.key] == s {
		delete(ts.subs, s.key)
	}
	h.m.subscriptions.Set(float64(len(h.subs)))
}

// dropSub ends a subscription (lease expired, 410 Gone).
func (h *Hub) dropSub(s *sub, reason string) {
	s.mu.Lock()
	gone := s.removed
	s.removed = true // no flush writes it any more
	topic, cb := s.rec.Topic, s.rec.Callback
	s.mu.Unlock()
	if gone {
		return
	}
	if err := h.st.DeleteSubscription(context.Background(), s.key); err != nil {
		h.log.Error("deleting subscription", "err", err)
	}
	h.mu.Lock()
	h.removeSubLocked(s)
	h.mu.Unlock()
	h.m.ended.WithLabelValues(reason).Inc()
	h.log.Info("subscription ended", "reason", reason, "topic", topic, "callback", cb)
}

// leaseLive reports whether this node's claims are surely still live (on
// the wall clock, as the store's leases).
func (h *Hub) leaseLive() bool { return time.Now().UnixNano() < h.leaseUntil.Load() }

// schedule decides what s waits for: nothing to deliver (its lease end),
// a retry's time, the claim's renewal, or a worker of its host (queued).
// It is called on every wake, by s's timer and after each step.
func (h *Hub) schedule(s *sub) {
	s.mu.Lock()
	if s.stopped || s.removed || s.ctx == nil || s.ctx.Err() != nil {
		s.mu.Unlock()
		return
	}
	if s.queued || s.busy {
		s.mu.Unlock() // the worker schedules it again after the step
		return
	}
	rec := &s.rec
	now := h.now()
	if !now.Before(rec.Expires) {
		s.mu.Unlock()
		go h.dropSub(s, "expired")
		return
	}
	var headSeq uint64
	if s.ts != nil {
		headSeq = s.ts.head.Load()
	}
	switch {
	case rec.Cursor >= headSeq:
		s.armLocked(now, min(rec.Expires.Sub(now), time.Hour)+time.Millisecond)
	case rec.NextAt.After(now):
		s.armLocked(now, rec.NextAt.Sub(now))
	case !h.leaseLive():
		// The claim may have passed to another node: deliver nothing
		// until it is renewed (or taken from us).
		s.armLocked(now, h.cfg.ClaimTTL/10)
	default:
		if s.hq == nil || s.hqFor != rec.Callback {
			s.hq, s.hqFor = h.hostQueue(hostOf(rec.Callback)), rec.Callback
		}
		s.queued = true
		hq := s.hq
		s.mu.Unlock()
		hq.push(h, s)
		return
	}
	s.mu.Unlock()
}

// armLocked makes s's timer call schedule after d (one timer per
// subscription, reset rather than made anew). s.mu must be held.
func (s *sub) armLocked(now time.Time, d time.Duration) {
	at := now.Add(d)
	if !s.timerAt.IsZero() && !s.timerAt.After(at) && s.timerAt.After(now) {
		return // armed for sooner already
	}
	s.timerAt = at
	if s.timer == nil {
		h := s.h
		s.timer = time.AfterFunc(d, func() {
			s.mu.Lock()
			s.timerAt = time.Time{}
			s.mu.Unlock()
			h.schedule(s)
		})
		return
	}
	s.timer.Reset(d)
}

// hostQueue is the subscriptions of one callback host waiting for a
// delivery step, and its workers: started as subscriptions are queued, at
// most MaxConcurrentPerHost, each ending when the queue is empty.
type hostQueue struct {
	mu      sync.Mutex
	q       []*sub
	head    int
	workers int
	// busy counts the workers inside a delivery step: one may wait on a
	// slow subscriber for as long as RequestTimeout, so a subscription
	// queued meanwhile needs a worker of its own (up to max), not one
	// that is merely running.
	busy int
	max  int
}

// hostQueue returns the queue of host, creating it.
func (h *Hub) hostQueue(host string) *hostQueue {
	h.hqMu.Lock()
	defer h.hqMu.Unlock()
	hq := h.hostQs[host]
	if hq == nil {
		hq = &hostQueue{max: h.cfg.MaxConcurrentPerHost}
		h.hostQs[host] = hq
	}
	return hq
}

func (hq *hostQueue) push(h *Hub, s *sub) {
	hq.mu.Lock()
	hq.q = append(hq.q, s)
	start := hq.workers < hq.max && hq.workers-hq.busy < len(hq.q)-hq.head
	if start && h.addWorker() {
		hq.workers++
	} else {
		start = false
	}
	hq.mu.Unlock()
	if start {
		go h.worker(hq)
	}
}

func (hq *hostQueue) setBusy(d int) {
	hq.mu.Lock()
	hq.busy += d
	hq.mu.Unlock()
}

// pop returns the next subscription, or nil (and the worker ends) when
// the queue is empty.
func (hq *hostQueue) pop() *sub {
	hq.mu.Lock()
	defer hq.mu.Unlock()
	if hq.head == len(hq.q) {
		hq.workers--
		hq.q, hq.head = hq.q[:0], 0
		return nil
	}
	s := hq.q[hq.head]
	hq.q[hq.head] = nil
	hq.head++
	if hq.head > 1024 && hq.head*2 > len(hq.q) { // reuse the front
		n := copy(hq.q, hq.q[hq.head:])
		clear(hq.q[n:])
		hq.q, hq.head = hq.q[:n], 0
	}
	return s
}

// addWorker counts a new worker unless Run is ending (Run waits for them).
func (h *Hub) addWorker() bool {
	h.workMu.Lock()
	defer h.workMu.Unlock()
	if h.workStopping {
		return false
	}
	h.workWG.Add(1)
	return true
}

// stopWorkers refuses new workers and waits for those running.
func (h *Hub) stopWorkers() {
	h.workMu.Lock()
	h.workStopping = true
	h.workMu.Unlock()
	h.workWG.Wait()
}

// worker takes delivery steps for its host's queued subscriptions.
func (h *Hub) worker(hq *hostQueue) {
	defer h.workWG.Done()
	for {
		s := hq.pop()
		if s == nil {
			return
		}
		s.mu.Lock()
		s.queued = false
		if s.stopped || s.removed {
			s.mu.Unlock()
			continue
		}
		s.busy = true
		ctx := s.ctx
		s.mu.Unlock()
		hq.setBusy(1)
		if ctx.Err() == nil {
			h.step(ctx, s)
		}
		hq.setBusy(-1)
		s.mu.Lock()
		s.busy = false
		if s.stopped {
			close(s.done)
			s.mu.Unlock()
			continue
		}
		s.mu.Unlock()
		h.schedule(s)
	}
}

// step delivers s's next notification once (or moves its cursor past a
// pruned log), the only step in flight for s.
func (h *Hub) step(ctx context.Context, s *sub) {
	s.mu.Lock()
	rec := s.rec
	s.mu.Unlock()
	// Checked again: it may have waited in the queue.
	if !h.now().Before(rec.Expires) {
		h.dropSub(s, "expired")
		return
	}
	if !h.leaseLive() || !rec.NextAt.IsZero() && rec.NextAt.After(h.now()) {
		return // schedule makes it wait
	}
	var headSeq uint64
	if s.ts != nil {
		headSeq = s.ts.head.Load()
	}
	e, err := h.entryAfter(ctx, rec.Topic, rec.Cursor)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		h.log.Error("reading the log", "topic", rec.Topic, "err", err)
		s.mu.Lock()
		s.rec.NextAt = h.now().Add(time.Second)
		s.mu.Unlock()
		return
	}
	if e == nil { // pruned or damaged past the cursor: skip to the head
		s.mu.Lock()
		s.rec.Cursor, s.dirty = max(s.rec.Cursor, headSeq), true
		s.mu.Unlock()
		return
	}
	if s.sem == nil || s.semFor != rec.Callback {
		s.sem, s.semFor = h.hostSemaphore(hostOf(rec.Callback)), rec.Callback
	}
	if !h.acquireSem(ctx, s.sem.sem) {
		return
	}
	dctx := ctx
	var warmOnce sync.Once
	warming := s.sem.warmUp(ctx)
	if warming {
		// The others wait only until this delivery has its connection,
		// not for its answer: a slow subscriber must not hold up the
		// other subscriptions of its host.
		dctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			GotConn: func(httptrace.GotConnInfo) { warmOnce.Do(s.sem.warmed) },
		})
	}
	s.mu.Lock()
	s.last = h.now()
	s.mu.Unlock()
	res := h.deliver(dctx, &rec, e, rec.Attempt+1, s)
	if warming {
		warmOnce.Do(s.sem.warmed)
	}
	h.releaseSem(s.sem.sem)
	if ctx.Err() != nil {
		return // shutting down: the attempt does not count
	}
	h.settle(s, e, res)
}

func hostOf(u string) string {
	if p, err := url.Parse(u); err == nil {
		return strings.ToLower(p.Hostname())
	}
	return u
}

// authorityOf is the callback's host and port (the scheme's default when
// none is written): the unit of the pending-verification limit, so that
// one subscriber cannot use up the allowance of another on the same host.
func authorityOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	port := p.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(p.Scheme, "https") {
			port = "443"
		}
	}
	return net.JoinHostPort(strings.ToLower(p.Hostname()), port)
}

// hostSlots bound the deliveries in flight to one host
// (MaxConcurrentPerHost), and let the first delivery to it go alone: a
// burst of first requests to a host would each dial (and, over TLS,
// shake hands) before any connection exists, while over HTTP/2 the first
// connection carries them all. After it, the transport's kept-alive
// connections (h2, or HTTP/1.1 up to MaxConcurrentPerHost) serve the
// host.
type hostSlots struct {
	sem  chan struct{}
	warm atomic.Bool
	gate chan struct{} // held by the first delivery
}

// warmUp waits, before the host's first delivery is done, for the one
// under way; it reports whether this delivery is the first (the caller
// then calls warmed after it).
func (hs *hostSlots) warmUp(ctx context.Context) bool {
	if hs.warm.Load() {
		return false
	}
	select {
	case hs.gate <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	if hs.warm.Load() {
		<-hs.gate
		return false
	}
	return true
}

func (hs *hostSlots) warmed() {
	hs.warm.Store(true)
	<-hs.gate
}

// hostSemaphore returns the slots of host.
func (h *Hub) hostSemaphore(host string) *hostSlots {
	h.mu.Lock()
	defer h.mu.Unlock()
	hs := h.hostSem[host]
	if hs == nil {
		hs = &hostSlots{sem: make(chan struct{}, h.cfg.MaxConcurrentPerHost), gate: make(chan struct{}, 1)}
		h.hostSem[host] = hs
	}
	return hs
}

func (h *Hub) acquire(ctx context.Context, host string) bool {
	return h.acquireSem(ctx, h.hostSemaphore(host).sem)
}

// acquireSem takes a slot of the host's semaphore, then one of the
// global bound.
func (h *Hub) acquireSem(ctx context.Context, sem chan struct{}) bool {
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	select {
	case h.global <- struct{}{}:
		return true
	case <-ctx.Done():
		<-sem
		return false
	}
}

func (h *Hub) release(host string) { h.releaseSem(h.hostSemaphore(host).sem) }

func (h *Hub) releaseSem(sem chan struct{}) {
	<-h.global
	<-sem
}

// entryAfter returns the first log entry of topic after seq (nil if
// none), reading a few ahead into the cache for subscribers catching up.
func (h *Hub) entryAfter(ctx context.Context, topic string, seq uint64) (*outEntry, error) {
	if e := h.cache.get(topic, seq+1); e != nil {
		return e, nil
	}
	es, err := h.st.Entries(ctx, topic, seq, 16)
	if err != nil || len(es) == 0 {
		return nil, err
	}
	first := newOutEntry(topic, &es[0])
	h.cache.put(topic, first)
	for i := range es[1:] {
		h.cache.put(topic, newOutEntry(topic, &es[i+1]))
	}
	return first, nil
}

// outEntry is a log entry with the delivery headers that are the same
// for every subscription of its topic, computed once per entry rather
// than once per delivery.
type outEntry struct {
	*hubstore.Entry
	link, id string
	hdr      struct{ ct, link, id []string } // the same, as header values
}

func newOutEntry(topic string, e *hubstore.Entry) *outEntry {
	o := &outEntry{Entry: e, link: linkHeader(topic, e), id: deliveryID(topic, e.Seq)}
	o.hdr.ct, o.hdr.link, o.hdr.id = []string{e.ContentType}, []string{o.link}, []string{o.id}
	return o
}

var (
	firstAttempt    = []string{"1"}
	userAgentHeader = []string{userAgent}
)

type result struct {
	ok, gone   bool
	status     int
	retryAfter time.Duration
	err        string
}

// maxErrorLen bounds a delivery's error message: the subscriber chooses
// its status line (up to the transport's 10 MB of headers), and the
// message is kept with every failed attempt and dead letter and shown on
// the admin pages.
const maxErrorLen = 512

// boundError cuts s to maxErrorLen bytes (at a character boundary).
func boundError(s string) string {
	if len(s) <= maxErrorLen {
		return s
	}
	cut := maxErrorLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// deliver POSTs e to the subscription's callback (WS-HUB-21..26).
// s, if not nil, keeps the keyed hash state of rec's secret for the next
// delivery (the caller holds s busy).
func (h *Hub) deliver(ctx context.Context, rec *hubstore.Subscription, e *outEntry, attempt int, s *sub) result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rec.Callback, bytes.NewReader(e.Body))
	if err != nil {
		return result{err: boundError(err.Error())}
	}
	// The entry's headers are made once and shared, read-only, by its
	// deliveries (neither the client nor the transport writes them).
	hdr := make(http.Header, 6)
	hdr["Content-Type"] = e.hdr.ct // byte for byte
	hdr["Link"] = e.hdr.link
	if rec.Secret != "" {
		hdr["X-Hub-Signature"] = []string{h.signFor(s, rec.Secret, e.Body)}
	}
	hdr["X-Hub-Delivery-Id"] = e.hdr.id
	if attempt == 1 {
		hdr["X-Hub-Attempt"] = firstAttempt
	} else {
		hdr["X-Hub-Attempt"] = []string{strconv.Itoa(attempt)}
	}
	hdr["User-Agent"] = userAgentHeader
	req.Header = hdr
	start := time.Now()
	resp, err := h.client.Do(req)
	h.m.latency.Observe(time.Since(start).Seconds())
	if err != nil {
		return result{err: boundError(err.Error())}
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // the body is ignored
	resp.Body.Close()
	r := result{status: resp.StatusCode}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		r.ok = true
	case resp.StatusCode == http.StatusGone:
		r.gone = true
	default:
		r.err = boundError("callback answered " + resp.Status)
		if resp.StatusCode == 429 || resp.StatusCode == 503 {
			r.retryAfter = retry.ParseRetryAfter(resp.Header.Get("Retry-After"), h.now())
		}
	}
	return r
}

func linkHeader(topic string, e *hubstore.Entry) string {
	var b strings.Builder
	b.WriteString("<" + topic + `>; rel="self"`)
	if e.HubURL != "" {
		b.WriteString(", <" + e.HubURL + `>; rel="hub"`)
	}
	for _, l := range e.Links {
		b.WriteString(", " + l)
	}
	return b.String()
}

func deliveryID(topic string, seq uint64) string {
	sum := sha256.Sum256([]byte(topic))
	return hex.EncodeToString(sum[:8]) + "-" + strconv.FormatUint(seq, 10)
}

// signFor signs body with secret, reusing s's keyed hash state when the
// secret is the one it was made for.
func (h *Hub) signFor(s *sub, secret string, body []byte) string {
	if s == nil {
		return sign(h.cfg.SignatureAlg, secret, body)
	}
	if s.mac == nil || s.macFor != secret {
		_, f := macAlg(h.cfg.SignatureAlg)
		s.mac, s.macFor = hmac.New(f, []byte(secret)), secret
	}
	alg, _ := macAlg(h.cfg.SignatureAlg)
	s.mac.Reset()
	s.mac.Write(body)
	var sum [sha512.Size]byte
	b := s.mac.Sum(sum[:0])
	out := make([]byte, 0, len(alg)+1+2*len(b))
	out = append(out, alg...)
	out = append(out, '=')
	out = hex.AppendEncode(out, b)
	return string(out)
}

func macAlg(alg string) (string, func() hash.Hash) {
	switch alg {
	case "sha1":
		return alg, sha1.New
	case "sha384":
		return alg, sha512.New384
	case "sha512":
		return alg, sha512.New
	default:
		return "sha256", sha256.New
	}
}

func sign(alg, secret string, body []byte) string {
	var f func() hash.Hash
	switch alg {
	case "sha1":
		f = sha1.New
	case "sha384":
		f = sha512.New384
	case "sha512":
		f = sha512.New
	default:
		alg, f = "sha256", sha256.New
	}
	m := hmac.New(f, []byte(secret))
	m.Write(body)
	return alg + "=" + hex.EncodeToString(m.Sum(nil))
}

// settle records the outcome of a delivery attempt.
func (h *Hub) settle(s *sub, e *outEntry, r result) {
	now := h.now()
	switch {
	case r.ok:
		h.m.deliveries.WithLabelValues("success").Inc()
		h.m.lag.Observe(now.Sub(e.Published).Seconds())
		s.mu.Lock()
		s.rec.Cursor = max(s.rec.Cursor, e.Seq)
		s.rec.Attempt, s.rec.FirstFail, s.rec.LastError, s.rec.NextAt = 0, time.Time{}, "", time.Time{}
		s.dirty = true
		s.mu.Unlock()
	case r.gone:
		h.m.deliveries.WithLabelValues("gone").Inc()
		h.dropSub(s, "gone")
	default:
		h.m.deliveries.WithLabelValues("failure").Inc()
		h.m.failures.Inc()
		s.mu.Lock()
		s.rec.Attempt++
		if s.rec.FirstFail.IsZero() {
			s.rec.FirstFail = now
		}
		s.rec.LastError = r.err
		giveUp := now.Sub(s.rec.FirstFail) >= h.cfg.GiveUpAfter
		if !giveUp {
			sch := h.cfg.RetrySchedule
			d := retry.HalfJitter(sch[min(s.rec.Attempt-1, len(sch)-1)])
			if r.retryAfter > d {
				d = min(r.retryAfter, sch[len(sch)-1])
			}
			// The last attempt is made when the give-up time comes.
			if deadline := s.rec.FirstFail.Add(h.cfg.GiveUpAfter); now.Add(d).After(deadline) {
				d = max(deadline.Sub(now), 0)
			}
			s.rec.NextAt, s.dirty = now.Add(d), true
		}
		s.mu.Unlock()
		if giveUp {
			h.deadLetter(s, e)
		} else {
			h.m.retries.Inc()
		}
	}
}

// deadLetter moves e to the dead-letter store for s and advances the
// cursor past it, in one transaction, if this node still holds s; the
// subscription stays.
func (h *Hub) deadLetter(s *sub, e *outEntry) {
	s.mu.Lock()
	if s.removed {
		s.mu.Unlock()
		return
	}
	d := DeadLetter{Topic: s.rec.Topic, Callback: s.rec.Callback, Seq: e.Seq, Published: e.Published,
		ContentType: e.ContentType, HubURL: e.HubURL, Links: e.Links, Body: e.Body,
		Attempts: s.rec.Attempt, FirstFail: s.rec.FirstFail, LastError: s.rec.LastError, At: h.now()}
	next := s.rec
	next.Cursor = max(next.Cursor, e.Seq)
	next.Attempt, next.FirstFail, next.LastError, next.NextAt = 0, time.Time{}, "", time.Time{}
	u := hubstore.CursorUpdate{Key: s.key, Cursor: next.Cursor}
	s.mu.Unlock()
	_, err := h.st.AddDeadLetter(context.Background(), h.node, d, u)
	if errors.Is(err, hubstore.ErrNotHolder) {
		h.lost([]string{s.key})
		return
	}
	if err != nil {
		h.log.Error("dead-lettering", "err", err)
		s.mu.Lock()
		s.rec.NextAt = h.now().Add(time.Minute)
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	// Only the delivery state: a renewal may have changed the rest.
	s.rec.Cursor = max(s.rec.Cursor, next.Cursor)
	s.rec.Attempt, s.rec.FirstFail, s.rec.LastError, s.rec.NextAt = 0, time.Time{}, "", time.Time{}
	s.mu.Unlock()
	h.m.deliveries.WithLabelValues("dead").Inc()
	h.m.dead.Inc()
	h.log.Warn("notification dead-lettered", "seq", e.Seq, "topic", d.Topic, "callback", d.Callback)
}

// flush persists the advanced cursors and retry states in one
// transaction; updates the store refuses (the claim was lost) stop the
// delivery of those subscriptions here.
func (h *Hub) flush() {
	h.mu.Lock()
	var dirty []*sub
	for _, s := range h.subs {
		s.mu.Lock()
		if s.dirty && !s.removed {
			dirty = append(dirty, s)
		}
		s.mu.Unlock()
	}
	h.mu.Unlock()
	if len(dirty) == 0 {
		return
	}
	us := make([]hubstore.CursorUpdate, 0, len(dirty))
	for _, s := range dirty {
		s.mu.Lock()
		us = append(us, s.update())
		s.dirty = false
		s.mu.Unlock()
	}
	refused, err := h.st.UpdateCursors(context.Background(), h.node, us)
	if err != nil {
		if !errors.Is(err, hubstore.ErrClosed) {
			h.log.Error("persisting cursors", "err", err)
		}
		for _, s := range dirty {
			s.mu.Lock()
			s.dirty = true
			s.mu.Unlock()
		}
		return
	}
	if len(refused) > 0 {
		h.lost(refused)
	}
}

// sweep ends expired subscriptions (of any node) and prunes log entries
// that every subscription of their topic has passed, by the stored
// cursors: what a node that takes over would resume from.
func (h *Hub) sweep(ctx context.Context) {
	heads, err := h.st.Heads(ctx)
	if err != nil {
		h.log.Error("sweeping", "err", err)
		return
	}
	now := h.now()
	floor := maps.Clone(heads)
	var expired []string
	for r, err := range h.st.Subscriptions(ctx, "") {
		if err != nil {
			h.log.Error("sweeping", "err", err)
			return
		}
		if !now.Before(r.Expires) {
			expired = append(expired, r.Key)
			continue
		}
		if f, ok := floor[r.Topic]; ok {
			floor[r.Topic] = min(f, r.Cursor)
		}
	}
	for _, key := range expired {
		h.mu.Lock()
		s := h.subs[key]
		h.mu.Unlock()
		if s != nil {
			h.dropSub(s, "expired")
			continue
		}
		if err := h.st.DeleteSubscription(ctx, key); err != nil {
			h.log.Error("deleting subscription", "err", err)
			continue
		}
		h.m.ended.WithLabelValues("expired").Inc()
	}
	for t, f := range floor {
		if _, err := h.st.Prune(ctx, t, f+1); err != nil && !errors.Is(err, hubstore.ErrClosed) && ctx.Err() == nil {
			h.log.Error("pruning the log", "topic", t, "err", err)
		}
	}
}

// DeadLetters lists the dead-lettered notifications (bodies included).
func (h *Hub) DeadLetters(ctx context.Context) ([]DeadLetter, error) {
	var out []DeadLetter
	for d, err := range h.st.DeadLetters(ctx) {
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// ErrNoSubscription is returned by Replay when the dead letter's
// subscription no longer exists.
var ErrNoSubscription = errors.New("hub: no active subscription for this dead letter")

// Replay delivers dead letter id once more to its subscription (with the
// subscription's current secret) and removes it on success.
func (h *Hub) Replay(ctx context.Context, id uint64) error {
	d, err := h.st.GetDeadLetter(ctx, id)
	if errors.Is(err, hubstore.ErrNotFound) {
		return fmt.Errorf("hub: no dead letter %d", id)
	}
	if err != nil {
		return err
	}
	key := subKey(d.Topic, d.Callback)
	h.mu.Lock()
	s := h.subs[key]
	h.mu.Unlock()
	var rec hubstore.Subscription
	if s != nil {
		s.mu.Lock()
		rec = s.rec
		s.mu.Unlock()
	} else if rec, err = h.st.GetSubscription(ctx, key); errors.Is(err, hubstore.ErrNotFound) {
		return ErrNoSubscription
	} else if err != nil {
		return err
	}
	e := &hubstore.Entry{Seq: d.Seq, Published: d.Published, ContentType: d.ContentType, HubURL: d.HubURL, Links: d.Links, Body: d.Body}
	host := hostOf(rec.Callback)
	if !h.acquire(ctx, host) {
		return ctx.Err()
	}
	r := h.deliver(ctx, &rec, newOutEntry(rec.Topic, e), d.Attempts+1, nil)
	h.release(host)
	if !r.ok {
		if r.gone {
			if s != nil {
				h.dropSub(s, "gone")
			} else if err := h.st.DeleteSubscription(ctx, key); err == nil {
				h.m.ended.WithLabelValues("gone").Inc()
			}
		}
		return fmt.Errorf("hub: replay failed: %s (status %d)", r.err, r.status)
	}
	h.m.deliveries.WithLabelValues("replayed").Inc()
	h.m.dead.Dec()
	return h.st.DeleteDeadLetter(ctx, id)
}

// entryCache keeps recently published or read entries so that a fan-out
// reads each entry from the store once, not once per subscriber.
type entryCache struct {
	mu    sync.Mutex
	max   int
	size  int
	m     map[cacheKey]*outEntry
	order []cacheKey
}

type cacheKey struct {
	topic string
	seq   uint64
}

func newEntryCache(maxBytes int) *entryCache {
	return &entryCache{max: maxBytes, m: map[cacheKey]*outEntry{}}
}

func entrySize(e *outEntry) int { return len(e.Body) + len(e.ContentType) + len(e.link) + 64 }

func (c *entryCache) get(topic string, seq uint64) *outEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[cacheKey{topic, seq}]
}

func (c *entryCache) put(topic string, e *outEntry) {
	if entrySize(e) > c.max/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := cacheKey{topic, e.Seq}
	if c.m[k] != nil {
		return
	}
	c.m[k] = e
	c.order = append(c.order, k)
	c.size += entrySize(e)
	for c.size > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		if oe := c.m[old]; oe != nil {
			c.size -= entrySize(oe)
			delete(c.m, old)
		}
	}
}
