package hub

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/httperr"
	"github.com/resourcesync-go/resourcesync/internal/linkheader"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

const (
	maxFormBytes = 64 << 10
	maxURLLen    = 4096
	maxSecretLen = 199 // WS-HUB-2a: less than 200 bytes
)

// ServeHTTP is the hub endpoint: subscription requests, thin pings
// (form-encoded, hub.mode=publish) and fat pings (any other Content-Type).
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, "the hub accepts POST only")
		return
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "application/x-www-form-urlencoded" {
		if h.limited(w) {
			return
		}
		h.fatPing(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			httpError(w, http.StatusRequestEntityTooLarge, "form body larger than 64 KiB")
			return
		}
		httpError(w, http.StatusBadRequest, "malformed form body: "+err.Error())
		return
	}
	switch mode := r.PostForm.Get("hub.mode"); mode {
	case "subscribe", "unsubscribe":
		h.subscribe(w, r, mode)
	case "publish":
		if h.limited(w) {
			return
		}
		h.thinPing(w, r)
	case "":
		httpError(w, http.StatusBadRequest, "hub.mode is missing")
	default:
		httpError(w, http.StatusBadRequest, fmt.Sprintf("unknown hub.mode %q", mode))
	}
}

// limited answers 429 when publishers exceed PublishRate.
func (h *Hub) limited(w http.ResponseWriter) bool {
	if h.pubRate.Allow() {
		return false
	}
	w.Header().Set("Retry-After", "1")
	httpError(w, http.StatusTooManyRequests, "too many publish requests; slow down")
	return true
}

// storeTimeout bounds the store calls of a request: a shared store
// (PostgreSQL) can stall (a table lock, a failover), and a publisher or
// subscriber must then get a 503 "try again" within seconds rather than
// wait as long, requests piling up on the store's connections. A
// variable for tests.
var storeTimeout = 10 * time.Second

// storeCtx is r's context bounded by storeTimeout.
func storeCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), storeTimeout)
}

// storeRefused is the message of a request the store refuses for good
// (hubstore.ErrInvalid: e.g. URLs too long for its indexes): a 400, not a
// 503 "try again" that a client would repeat forever.
func storeRefused(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, hubstore.ErrInvalid.Error()+": "); i >= 0 {
		msg = msg[i+len(hubstore.ErrInvalid.Error())+2:]
	}
	return "refused by the hub's store: " + msg
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	io.WriteString(w, msg+"\n")
}

func accepted(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusAccepted)
	io.WriteString(w, msg+"\n")
}

// checkURL validates a topic or callback URL.
func checkURL(name, s string) (*url.URL, error) {
	if s == "" {
		return nil, fmt.Errorf("%s is missing", name)
	}
	if len(s) > maxURLLen {
		return nil, fmt.Errorf("%s is longer than %d bytes", name, maxURLLen)
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%s is not a URL: %v", name, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%s must be an http or https URL", name)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("%s has no host", name)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%s must not carry user information", name)
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		return nil, fmt.Errorf("%s must not carry a fragment", name)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%s has an invalid port", name)
		}
	}
	return u, nil
}

// normalize decodes percent-encoded unreserved characters (WS-HUB-8);
// nothing else is normalised.
func normalize(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil && unreserved(byte(v)) {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// subKey is the identity of a subscription: (topic, callback), normalised.
func subKey(topic, callback string) string {
	return normalize(topic) + "\x00" + normalize(callback)
}

func (h *Hub) topicAllowed(topic string) bool {
	return h.cfg.TopicAllowed == nil || h.cfg.TopicAllowed(topic)
}

// subscribe validates a (un)subscription request, stores the
// verification job and answers 202 (WS-HUB-1..10).
func (h *Hub) subscribe(w http.ResponseWriter, r *http.Request, mode string) {
	if h.cfg.SubscriberAuth != nil && !h.cfg.SubscriberAuth(w, r) {
		return
	}
	f := r.PostForm
	topic, callback := normalize(f.Get("hub.topic")), normalize(f.Get("hub.callback"))
	// The callback is called exactly as the subscriber wrote it (its query
	// may be a signature over its bytes); normalised, it only identifies
	// the subscription.
	rawCallback := strings.TrimSpace(f.Get("hub.callback"))
	if _, err := checkURL("hub.topic", topic); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	cu, err := checkURL("hub.callback", callback)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !h.topicAllowed(topic) {
		httpError(w, http.StatusForbidden, "this hub does not serve that topic")
		return
	}
	secret, hasSecret := f.Get("hub.secret"), f.Has("hub.secret")
	if mode == "subscribe" && len(secret) > maxSecretLen {
		httpError(w, http.StatusBadRequest, "hub.secret must be shorter than 200 bytes")
		return
	}
	if mode == "subscribe" && hasSecret && secret == "" {
		httpError(w, http.StatusBadRequest, "hub.secret is empty")
		return
	}
	// The request-forgery guard runs before anything is dialled.
	if err := h.checkHost(r.Context(), cu.Hostname()); err != nil {
		h.m.refused.Inc()
		httpError(w, http.StatusBadRequest, "hub.callback refused: "+err.Error())
		return
	}
	key := subKey(topic, callback)
	sctx, cancel := storeCtx(r)
	defer cancel()
	if mode == "subscribe" {
		n, err := h.st.CountSubscriptions(sctx, topic)
		full := err == nil && n >= h.cfg.MaxSubscriptionsPerTopic
		if full {
			_, err := h.st.GetSubscription(sctx, key)
			full = errors.Is(err, hubstore.ErrNotFound)
		}
		if full {
			httpError(w, http.StatusTooManyRequests, "too many subscriptions to this topic")
			return
		}
	}
	lease := h.grantLease(f.Get("hub.lease_seconds"))
	j := &hubstore.Job{Key: key, Mode: mode, Topic: topic, Callback: rawCallback, Lease: lease,
		VerifyToken: f.Get("hub.verify_token"), HasToken: f.Has("hub.verify_token"), NextAt: h.now()}
	if mode == "subscribe" {
		j.Secret = secret
	}
	if err := h.addJob(sctx, j); errors.Is(err, errTooManyPending) {
		w.Header().Set("Retry-After", "60")
		httpError(w, http.StatusTooManyRequests, err.Error())
		return
	} else if errors.Is(err, hubstore.ErrInvalid) {
		httpError(w, http.StatusBadRequest, storeRefused(err))
		return
	} else if err != nil {
		h.log.Error("storing verification", "err", err)
		w.Header().Set("Retry-After", "30")
		httpError(w, http.StatusServiceUnavailable, "could not store the request; try again")
		return
	}
	h.m.requests.WithLabelValues(mode).Inc()
	h.wakeVerifier()
	accepted(w, "accepted: verification of intent follows")
}

// grantLease clamps a requested lease to the configured bounds (WS-HUB-3:
// clamp, don't reject); an absent or unparsable value gets the default.
func (h *Hub) grantLease(s string) int64 {
	d := h.cfg.LeaseDefault
	if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil && n > 0 {
		if n > int64(h.cfg.LeaseMax/time.Second) {
			d = h.cfg.LeaseMax
		} else {
			d = time.Duration(n) * time.Second
		}
	}
	d = min(max(d, h.cfg.LeaseMin), h.cfg.LeaseMax)
	return int64(d / time.Second)
}

// fatPing handles the ResourceSync way of publishing (WS-HUB-31, RS-WS-2):
// the body is the notification, Link rel="self" names the topic and
// rel="hub" this hub.
func (h *Hub) fatPing(w http.ResponseWriter, r *http.Request) {
	if !h.publisher(w, r) {
		return
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		httpError(w, http.StatusUnsupportedMediaType, "a published notification needs a Content-Type")
		return
	}
	// Every Link field counts: RFC 9110 §5.3 lets a sender split a list.
	links := linkheader.Parse(nil, r.Header.Values("Link"))
	var selfs, hubs []string
	var extra []string
	for _, l := range links {
		switch {
		case l.HasRel("self"):
			selfs = append(selfs, l.Target)
		case l.HasRel("hub"):
			hubs = append(hubs, l.Target)
		default:
			extra = append(extra, l.Raw)
		}
		if l.HasRel("self") && l.HasRel("hub") {
			hubs = append(hubs, l.Target)
		}
	}
	if len(selfs) != 1 {
		httpError(w, http.StatusBadRequest, `a published notification needs exactly one Link rel="self" (the topic)`)
		return
	}
	if len(hubs) == 0 {
		httpError(w, http.StatusBadRequest, `a published notification needs a Link rel="hub"`)
		return
	}
	hubURL := hubs[0]
	if h.cfg.URL != "" {
		hubURL = ""
		for _, u := range hubs {
			if u == h.cfg.URL {
				hubURL = u
			}
		}
		if hubURL == "" {
			httpError(w, http.StatusBadRequest, `Link rel="hub" does not name this hub (`+h.cfg.URL+`)`)
			return
		}
	}
	topic := normalize(selfs[0])
	if _, err := checkURL("the rel=\"self\" topic", topic); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !h.topicAllowed(topic) {
		httpError(w, http.StatusForbidden, "this hub does not serve that topic")
		return
	}
	if r.ContentLength > h.cfg.MaxPayloadBytes {
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("notification larger than %d bytes", h.cfg.MaxPayloadBytes))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxPayloadBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("notification larger than %d bytes", h.cfg.MaxPayloadBytes))
			return
		}
		httpError(w, http.StatusBadRequest, "reading the notification: "+err.Error())
		return
	}
	sctx, cancel := storeCtx(r)
	defer cancel()
	seq, err := h.publish(sctx, topic, ct, hubURL, body, extra, "fat")
	if errors.Is(err, hubstore.ErrInvalid) {
		httpError(w, http.StatusBadRequest, storeRefused(err))
		return
	} else if err != nil {
		h.log.Error("storing notification", "topic", topic, "err", err)
		w.Header().Set("Retry-After", "30")
		httpError(w, http.StatusServiceUnavailable, "could not store the notification; try again")
		return
	}
	w.Header().Set("X-Hub-Sequence", strconv.FormatUint(seq, 10))
	accepted(w, "stored")
}

// publisher checks the publisher's bearer token, when the hub has one, for
// every kind of publish (fat and thin alike), and answers 401 otherwise.
func (h *Hub) publisher(w http.ResponseWriter, r *http.Request) bool {
	if h.cfg.PublishToken == "" {
		return true
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(h.cfg.PublishToken)) == 1 {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="hub"`)
	httpError(w, http.StatusUnauthorized, "publishing requires the publisher's bearer token")
	return false
}

// thinPing handles hub.mode=publish with hub.url / hub.topic (repeated,
// and Superfeedr's hub.url[]): the hub fetches each topic and distributes
// its content (WS-HUB-30).
func (h *Hub) thinPing(w http.ResponseWriter, r *http.Request) {
	if !h.publisher(w, r) {
		return
	}
	var topics []string
	seen := map[string]bool{}
	for _, k := range []string{"hub.url", "hub.url[]", "hub.topic"} {
		for _, t := range r.PostForm[k] {
			t = normalize(strings.TrimSpace(t))
			if t != "" && !seen[t] {
				seen[t] = true
				topics = append(topics, t)
			}
		}
	}
	if len(topics) == 0 {
		httpError(w, http.StatusBadRequest, "hub.mode=publish needs hub.url or hub.topic")
		return
	}
	if len(topics) > 100 {
		httpError(w, http.StatusBadRequest, "at most 100 topics per publish request")
		return
	}
	for _, t := range topics {
		if _, err := checkURL("hub.url", t); err != nil {
			httpError(w, http.StatusBadRequest, err.Error())
			return
		}
		if !h.topicAllowed(t) {
			httpError(w, http.StatusForbidden, "this hub does not serve "+t)
			return
		}
	}
	hubURL := h.cfg.URL
	if hubURL == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		hubURL = scheme + "://" + r.Host + r.URL.Path
	}
	for _, t := range topics {
		// Subscribers on any node count.
		n, err := func() (int, error) {
			ctx, cancel := storeCtx(r)
			defer cancel()
			return h.st.CountSubscriptions(ctx, t)
		}()
		if err == nil && n == 0 {
			continue // nobody to deliver to: nothing to fetch
		}
		ct, body, err := h.fetchTopic(r.Context(), t)
		if err != nil {
			httpError(w, http.StatusBadGateway, fmt.Sprintf("fetching %s: %v", t, err))
			return
		}
		_, err = func() (uint64, error) {
			ctx, cancel := storeCtx(r)
			defer cancel()
			return h.publish(ctx, t, ct, hubURL, body, nil, "thin")
		}()
		if errors.Is(err, hubstore.ErrInvalid) {
			httpError(w, http.StatusBadRequest, storeRefused(err))
			return
		} else if err != nil {
			w.Header().Set("Retry-After", "30")
			httpError(w, http.StatusServiceUnavailable, "could not store the notification; try again")
			return
		}
	}
	accepted(w, "stored")
}

func (h *Hub) fetchTopic(ctx context.Context, topic string) (ct string, body []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, topic, nil)
	if err != nil {
		return "", nil, err
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := h.fetch.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return "", nil, &httperr.StatusError{URL: topic, Code: resp.StatusCode}
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, h.cfg.MaxPayloadBytes+1))
	if err != nil {
		return "", nil, err
	}
	if int64(len(body)) > h.cfg.MaxPayloadBytes {
		return "", nil, fmt.Errorf("topic larger than %d bytes", h.cfg.MaxPayloadBytes)
	}
	ct = resp.Header.Get("Content-Type")
	if ct == "" {
		ct = "application/octet-stream"
	}
	return ct, body, nil
}

// Publish appends a notification to topic's log in-process (the embedded
// hub) and returns its sequence number once the append is committed.
// links are extra Link header values passed to subscribers, such as
// `<https://example.org/capabilitylist.xml>; rel="resourcesync"`.
func (h *Hub) Publish(ctx context.Context, topic, contentType string, body []byte, links []string) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	topic = normalize(topic)
	if _, err := checkURL("topic", topic); err != nil {
		return 0, fmt.Errorf("hub: %w", err)
	}
	if contentType == "" {
		return 0, errors.New("hub: Publish needs a content type")
	}
	if int64(len(body)) > h.cfg.MaxPayloadBytes {
		return 0, fmt.Errorf("hub: notification larger than %d bytes", h.cfg.MaxPayloadBytes)
	}
	return h.publish(ctx, topic, contentType, h.cfg.URL, body, links, "inproc")
}

func (h *Hub) publish(ctx context.Context, topic, ct, hubURL string, body []byte, links []string, kind string) (uint64, error) {
	e := &hubstore.Entry{Published: h.now(), ContentType: ct, HubURL: hubURL, Links: links, Body: body}
	seq, err := h.st.Append(ctx, topic, *e)
	if err != nil {
		return 0, err
	}
	e.Seq = seq
	h.m.publishes.WithLabelValues(kind).Inc()
	h.cache.put(topic, newOutEntry(topic, e))
	h.mu.Lock()
	ts := h.topic(topic)
	ts.head.Store(max(ts.head.Load(), e.Seq))
	subs := make([]*sub, 0, len(ts.subs))
	for _, s := range ts.subs {
		subs = append(subs, s)
	}
	h.mu.Unlock()
	for _, s := range subs {
		s.wake()
	}
	if h.cfg.OnPublished != nil {
		h.cfg.OnPublished(topic, ct, body)
	}
	return e.Seq, nil
}
