package wspush

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/resourcesync-go/resourcesync/feed/activity"
)

// Vocabulary of the Solid Notifications Protocol.
const (
	// ChannelType is the channel type this package offers, in full.
	ChannelType = "http://www.w3.org/ns/solid/notifications#WebSocketChannel2023"
	// ChannelTypeShort is its spelling under NotificationContext.
	ChannelTypeShort = "WebSocketChannel2023"
	// NotificationContext is the JSON-LD context of requests and
	// channel descriptions.
	NotificationContext = "https://www.w3.org/ns/solid/notification/v1"
	// SubscriptionRel is the link relation (rs:ln rel, Link header) that
	// names a subscription endpoint; Solid's notify:subscription.
	SubscriptionRel = "http://www.w3.org/ns/solid/notifications#subscription"
	// ContentType of subscription requests and channel descriptions.
	ContentType = "application/ld+json"
)

// Config bounds a Broker. Zero values take the defaults.
type Config struct {
	// ReceiveURL is the http(s) URL where Broker.ReceiveHandler is
	// mounted; receiveFrom is it as ws(s) with ?token=…. Required.
	ReceiveURL string
	// TopicAllowed says which topics may be subscribed to; nil allows
	// every topic.
	TopicAllowed func(topic string) bool
	// MaxConns caps open connections (default 256); MaxPending the tokens
	// handed out and not used yet (default 1024): a flood of subscription
	// requests gets 429 once it is reached.
	MaxConns, MaxPending int
	// SendBuffer is the number of frames queued per connection (default
	// 1024); a connection whose queue is full is closed.
	SendBuffer int
	// TokenTTL is how long a receiveFrom URL may wait to be used
	// (default 1 minute).
	TokenTTL time.Duration
	// PingInterval (default 30 s) and WriteTimeout (default 10 s) end
	// connections to peers that went away.
	PingInterval, WriteTimeout time.Duration
	// OriginPatterns are the browser origins (host patterns, see
	// websocket.AcceptOptions) allowed besides the endpoint's own.
	OriginPatterns []string
	Logger         *slog.Logger
}

// Broker hands out channels and fans activities out to their connections.
type Broker struct {
	cfg     Config
	log     *slog.Logger
	mu      sync.Mutex
	pending map[string]pending
	topics  map[string]map[*conn]struct{}
	streams map[string]*stream
	conns   int
	closed  bool
	done    chan struct{}
}

// stream holds the frames of one journal published but not settled yet:
// sent before the documents that list them exist, they are replayed to a
// connection that opens before those documents do.
type stream struct {
	frames []retained
	// missed is the last sequence number not retained (nobody listened,
	// or more than SendBuffer were waiting): until it is settled, a new
	// connection cannot be told everything and is refused.
	missed uint64
}

type retained struct {
	seq    uint64
	frame  []byte
	topics []string
}

type pending struct {
	topic   string
	expires time.Time
}

type conn struct {
	ctx    context.Context
	topic  string
	send   chan []byte
	cancel context.CancelCauseFunc
	once   sync.Once
}

// errSlow ends a connection whose reader fell behind.
var errSlow = errors.New("wspush: subscriber too slow, frames dropped")

// New returns a Broker.
func New(cfg Config) (*Broker, error) {
	u, err := url.Parse(cfg.ReceiveURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("wspush: ReceiveURL must be an absolute http(s) URL")
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 256
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 1024
	}
	if cfg.SendBuffer <= 0 {
		cfg.SendBuffer = 1024
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = time.Minute
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = 30 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	b := &Broker{cfg: cfg, log: cfg.Logger, pending: map[string]pending{}, topics: map[string]map[*conn]struct{}{}, streams: map[string]*stream{}, done: make(chan struct{})}
	if b.log == nil {
		b.log = slog.Default()
	}
	return b, nil
}

// Close ends every connection and refuses new ones.
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	close(b.done)
	for _, cs := range b.topics {
		for c := range cs {
			c.cancel(errors.New("wspush: closing"))
		}
	}
}

// Conns returns the number of open connections.
func (b *Broker) Conns() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.conns
}

// Publish sends a to the connections subscribed to any of topics (each
// connection once). It never blocks: a connection whose queue is full is
// closed. The frame is encoded once.
func (b *Broker) Publish(a *activity.Activity, topics ...string) error {
	frame, err := json.Marshal(a)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fanOut(frame, topics)
	return nil
}

// fanOut queues frame for the connections of topics; b.mu is held.
func (b *Broker) fanOut(frame []byte, topics []string) {
	var sent map[*conn]bool
	if len(topics) > 1 {
		sent = map[*conn]bool{}
	}
	for _, t := range topics {
		for c := range b.topics[t] {
			if sent != nil {
				if sent[c] {
					continue
				}
				sent[c] = true
			}
			select {
			case c.send <- frame:
			default:
				c.cancel(errSlow)
			}
		}
	}
}

// PublishRetained publishes a, record seq of journal name, and keeps it
// until Settle(name, seq or later): a connection that opens meanwhile
// gets it first. A Source pushes a change as soon as it is durable and
// settles it once the Change Lists name it, so that a subscriber that
// connects, then reads the Change Lists, finds every change in one or the
// other.
func (b *Broker) PublishRetained(name string, seq uint64, a *activity.Activity, topics ...string) error {
	frame, err := json.Marshal(a)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.stream(name)
	if len(st.frames) < b.cfg.SendBuffer {
		st.frames = append(st.frames, retained{seq: seq, frame: frame, topics: topics})
	} else {
		st.missed = max(st.missed, seq)
	}
	b.fanOut(frame, topics)
	return nil
}

// Missed records that journal name's records up to seq were not
// published (they could not be read): until they are settled, new
// connections are refused (503), since they could not be told about them.
func (b *Broker) Missed(name string, seq uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.stream(name)
	st.missed = max(st.missed, seq)
}

// SkipIfIdle is Missed when no connection is open, and reports whether
// it was: the caller then need not read the records at all.
func (b *Broker) SkipIfIdle(name string, seq uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conns > 0 {
		return false
	}
	st := b.stream(name)
	st.missed = max(st.missed, seq)
	return true
}

// Settle forgets the retained records of journal name up to seq: the
// Change Lists now name them.
func (b *Broker) Settle(name string, seq uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.stream(name)
	i := 0
	for i < len(st.frames) && st.frames[i].seq <= seq {
		i++
	}
	st.frames = append(st.frames[:0], st.frames[i:]...)
	if st.missed <= seq {
		st.missed = 0
	}
}

func (b *Broker) stream(name string) *stream {
	st := b.streams[name]
	if st == nil {
		st = &stream{}
		b.streams[name] = st
	}
	return st
}

// request is a subscription request; description, the answer.
type request struct {
	Type  string `json:"type"`
	Topic string `json:"topic"`
}

// Description is a channel description (the answer to a subscription).
type Description struct {
	Context     any    `json:"@context,omitempty"`
	ID          string `json:"id"`
	Type        string `json:"type"`
	Topic       string `json:"topic"`
	ReceiveFrom string `json:"receiveFrom"`
	EndAt       string `json:"endAt,omitempty"`
}

// errNotJSON is a request that is not JSON (400); others are 422.
var errNotJSON = errors.New("subscription request is not JSON")

// channelType reports whether t names WebSocketChannel2023.
func channelType(t string) bool {
	return t == ChannelType || t == ChannelTypeShort || t == "notify:"+ChannelTypeShort
}

// parseRequest reads a subscription request: a JSON object naming the
// channel type and a topic.
func parseRequest(body []byte) (*request, error) {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotJSON, err)
	}
	if !channelType(req.Type) {
		return nil, fmt.Errorf("unsupported channel type %q: this endpoint offers %s", req.Type, ChannelType)
	}
	if req.Topic == "" {
		return nil, errors.New("no topic: name a Capability List, the Source's base URL or one of its resources")
	}
	return &req, nil
}

// maxRequest bounds a subscription request's body.
const maxRequest = 16 << 10

// SubscribeHandler serves the subscription endpoint: POST a request,
// get a channel description (200, application/ld+json).
func (b *Broker) SubscribeHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			http.Error(w, "POST a WebSocketChannel2023 subscription request (JSON-LD naming a topic)", http.StatusMethodNotAllowed)
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || (mt != ContentType && mt != "application/json") {
			http.Error(w, "subscription request must be application/ld+json", http.StatusUnsupportedMediaType)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRequest+1))
		if err != nil {
			http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
			return
		}
		if len(body) > maxRequest {
			http.Error(w, "subscription request too large", http.StatusRequestEntityTooLarge)
			return
		}
		req, err := parseRequest(body)
		if err != nil {
			code := http.StatusUnprocessableEntity
			if errors.Is(err, errNotJSON) {
				code = http.StatusBadRequest
			}
			http.Error(w, err.Error(), code)
			return
		}
		if b.cfg.TopicAllowed != nil && !b.cfg.TopicAllowed(req.Topic) {
			http.Error(w, "no such topic: name a Capability List, the Source's base URL or one of its resources", http.StatusUnprocessableEntity)
			return
		}
		tok, exp, err := b.token(req.Topic)
		if err != nil {
			w.Header().Set("Retry-After", "10")
			http.Error(w, err.Error(), http.StatusTooManyRequests)
			return
		}
		d := Description{Context: []string{NotificationContext}, ID: channelID(tok), Type: ChannelType, Topic: req.Topic,
			ReceiveFrom: b.receiveFrom(tok), EndAt: exp.UTC().Format(time.RFC3339)}
		w.Header().Set("Content-Type", ContentType)
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(d)
	})
}

// channelID names a channel without giving its token away.
func channelID(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return "urn:resourcesync:channel:" + hex.EncodeToString(sum[:12])
}

func (b *Broker) receiveFrom(tok string) string {
	u, _ := url.Parse(b.cfg.ReceiveURL)
	if u.Scheme == "https" {
		u.Scheme = "wss"
	} else {
		u.Scheme = "ws"
	}
	u.RawQuery = "token=" + tok
	return u.String()
}

var errPendingFull = errors.New("too many subscriptions not connected yet: try again later")

func (b *Broker) token(topic string) (string, time.Time, error) {
	var raw [32]byte
	rand.Read(raw[:])
	tok := base64.RawURLEncoding.EncodeToString(raw[:])
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) >= b.cfg.MaxPending {
		for k, p := range b.pending {
			if now.After(p.expires) {
				delete(b.pending, k)
			}
		}
		if len(b.pending) >= b.cfg.MaxPending {
			return "", time.Time{}, errPendingFull
		}
	}
	exp := now.Add(b.cfg.TokenTTL)
	b.pending[tok] = pending{topic: topic, expires: exp}
	return tok, exp, nil
}

// take spends tok and registers a connection on its topic: frames
// published from now on are queued for it, before the handshake answers,
// so that a subscriber that catches up after connecting misses nothing.
func (b *Broker) take(tok string) (*conn, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.pending[tok]
	if !ok || time.Now().After(p.expires) {
		delete(b.pending, tok)
		return nil, http.StatusForbidden
	}
	if b.closed {
		return nil, http.StatusServiceUnavailable
	}
	if b.conns >= b.cfg.MaxConns {
		return nil, http.StatusServiceUnavailable // the token stays: try again
	}
	for _, st := range b.streams {
		if st.missed != 0 {
			return nil, http.StatusServiceUnavailable // until the documents are published
		}
	}
	delete(b.pending, tok)
	c := &conn{topic: p.topic, send: make(chan []byte, b.cfg.SendBuffer)}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	cs := b.topics[p.topic]
	if cs == nil {
		cs = map[*conn]struct{}{}
		b.topics[p.topic] = cs
	}
	cs[c] = struct{}{}
	b.conns++
	for _, st := range b.streams {
		for _, r := range st.frames {
			for _, t := range r.topics {
				if t == p.topic {
					select {
					case c.send <- r.frame:
					default:
						c.cancel(errSlow)
					}
					break
				}
			}
		}
	}
	return c, 0
}

func (b *Broker) drop(c *conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c.cancel(nil)
	c.once.Do(func() {
		cs := b.topics[c.topic]
		delete(cs, c)
		if len(cs) == 0 {
			delete(b.topics, c.topic)
		}
		b.conns--
	})
}

// readLimit bounds what a client may send: it sends nothing but control
// frames.
const readLimit = 1 << 10

// ReceiveHandler serves receiveFrom: the WebSocket handshake with a token
// from SubscribeHandler, then the activities as text frames.
func (b *Broker) ReceiveHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := r.URL.Query().Get("token")
		if tok == "" {
			http.Error(w, "no token: POST a subscription request to the subscription endpoint first", http.StatusUnauthorized)
			return
		}
		if !websocketRequest(r) {
			http.Error(w, "a WebSocket handshake is expected here", http.StatusUpgradeRequired)
			return
		}
		if !b.originAllowed(r) {
			http.Error(w, "origin not allowed", http.StatusForbidden)
			return
		}
		c, code := b.take(tok)
		if c == nil {
			msg := "unknown, used or expired token: subscribe again"
			if code == http.StatusServiceUnavailable {
				msg = "too many connections, or changes being published: try again later"
				w.Header().Set("Retry-After", "10")
			}
			http.Error(w, msg, code)
			return
		}
		defer b.drop(c)
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: b.cfg.OriginPatterns})
		if err != nil {
			return // Accept answered
		}
		ws.SetReadLimit(readLimit)
		b.serve(c.ctx, ws, c)
	})
}

// websocketRequest reports whether r asks for a WebSocket upgrade.
func websocketRequest(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// originAllowed repeats websocket.Accept's Origin rule before the token
// is spent: a page of another origin cannot use up a mirror's token.
func (b *Broker) originAllowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true // not a browser
	}
	u, err := url.Parse(o)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	for _, p := range b.cfg.OriginPatterns {
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(u.Host)); ok {
			return true
		}
	}
	return false
}

// serve writes c's frames to ws and pings it until ctx ends or ws fails.
func (b *Broker) serve(ctx context.Context, ws *websocket.Conn, c *conn) {
	// A client sends nothing; CloseRead reads its control frames (pongs,
	// close) and ends ctx on anything else.
	ctx = ws.CloseRead(ctx)
	ping := time.NewTicker(b.cfg.PingInterval)
	defer ping.Stop()
	write := func(f func(context.Context) error) error {
		wctx, cancel := context.WithTimeout(ctx, b.cfg.WriteTimeout)
		defer cancel()
		return f(wctx)
	}
	for {
		select {
		case <-ctx.Done():
			status, reason := websocket.StatusGoingAway, "closing"
			if errors.Is(context.Cause(ctx), errSlow) {
				status, reason = websocket.StatusPolicyViolation, "too slow: frames dropped, catch up from the Change Lists"
				b.log.Warn("wspush: dropped a subscriber that does not keep up", "topic", c.topic)
			}
			ws.Close(status, reason)
			return
		case f := <-c.send:
			if err := write(func(ctx context.Context) error { return ws.Write(ctx, websocket.MessageText, f) }); err != nil {
				ws.CloseNow()
				return
			}
		case <-ping.C:
			if err := write(ws.Ping); err != nil {
				ws.CloseNow()
				return
			}
		}
	}
}
