package wspush

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/resourcesync-go/resourcesync/feed/activity"
)

const topic = "http://127.0.0.1/.resourcesync/default/capabilitylist.xml"

// server serves a Broker on 127.0.0.1: /sub subscribes, /recv receives.
func server(t *testing.T, edit func(*Config)) (*Broker, *httptest.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{ReceiveURL: "http://" + ln.Addr().String() + "/recv", TopicAllowed: func(s string) bool { return s == topic }}
	if edit != nil {
		edit(&cfg)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/sub", b.SubscribeHandler())
	mux.Handle("/recv", b.ReceiveHandler())
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	srv.Start()
	t.Cleanup(func() { b.Close(); srv.Close() })
	return b, srv
}

func act(id string) *activity.Activity {
	return &activity.Activity{Type: activity.Update, Object: &activity.Ref{ID: id, Type: "Document", Digest: "md5:00"}, EndTime: time.Now().UTC()}
}

func TestPushEndToEnd(t *testing.T) {
	b, srv := server(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := Subscribe(ctx, srv.Client(), srv.URL+"/sub", topic)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d.ReceiveFrom, "ws://127.0.0.1:") || d.Topic != topic || d.Type != ChannelType {
		t.Fatalf("description %+v", d)
	}
	r, err := Dial(ctx, srv.Client(), d.ReceiveFrom)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Registered before the handshake answered: nothing published now is lost.
	if b.Conns() != 1 {
		t.Fatalf("conns %d after Dial", b.Conns())
	}
	for i := range 3 {
		b.Publish(act("http://127.0.0.1/"+string(rune('a'+i))), topic, "http://127.0.0.1/")
	}
	b.Publish(act("http://127.0.0.1/other"), "http://127.0.0.1/other-topic")
	for i := range 3 {
		a, err := r.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := "http://127.0.0.1/" + string(rune('a'+i)); a.Object.ID != want {
			t.Fatalf("activity %d: %s, want %s (each once, in order)", i, a.Object.ID, want)
		}
	}
	// The token was single-use.
	if _, err := Dial(ctx, srv.Client(), d.ReceiveFrom); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("second use of a token: %v", err)
	}
}

func TestHostileClients(t *testing.T) {
	b, srv := server(t, func(c *Config) { c.MaxPending = 5; c.MaxConns = 2; c.TokenTTL = 300 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	post := func(ct, body string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/sub", strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	handshake := func(query, origin string) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/recv"+query, nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	good := `{"@context":["` + NotificationContext + `"],"type":"WebSocketChannel2023","topic":"` + topic + `"}`
	for _, c := range []struct {
		name string
		got  func() int
		want int
	}{
		{"GET the subscription endpoint", func() int { r, _ := srv.Client().Get(srv.URL + "/sub"); r.Body.Close(); return r.StatusCode }, 405},
		{"not JSON-LD", func() int { return post("text/plain", good) }, 415},
		{"not JSON", func() int { return post(ContentType, "{") }, 400},
		{"other channel type", func() int { return post(ContentType, `{"type":"WebhookChannel2023","topic":"`+topic+`"}`) }, 422},
		{"unknown topic", func() int { return post(ContentType, `{"type":"WebSocketChannel2023","topic":"http://elsewhere/"}`) }, 422},
		{"huge request", func() int { return post(ContentType, `{"type":"`+strings.Repeat("x", 1<<20)+`"}`) }, 413},
		{"no token", func() int { return handshake("", "") }, 401},
		{"wrong token", func() int { return handshake("?token=AAAA", "") }, 403},
		{"not a WebSocket handshake", func() int { r, _ := srv.Client().Get(srv.URL + "/recv?token=x"); r.Body.Close(); return r.StatusCode }, 426},
	} {
		if got := c.got(); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}

	// Another origin is refused before the token is spent; the same
	// token then works without Origin (not a browser).
	d, err := Subscribe(ctx, srv.Client(), srv.URL+"/sub", topic)
	if err != nil {
		t.Fatal(err)
	}
	tok := d.ReceiveFrom[strings.Index(d.ReceiveFrom, "?"):]
	if got := handshake(tok, "http://evil.example"); got != 403 {
		t.Errorf("other origin: %d, want 403", got)
	}
	if got := handshake(tok, srv.URL); got != 101 {
		t.Errorf("same origin: %d, want 101", got)
	}

	// Once the outstanding tokens expired, subscriptions are taken again.
	for range 10 {
		post(ContentType, good)
	}
	time.Sleep(400 * time.Millisecond)
	if _, err := Subscribe(ctx, srv.Client(), srv.URL+"/sub", topic); err != nil {
		t.Errorf("after the tokens expired: %v", err)
	}
	// Expired token.
	d, _ = Subscribe(ctx, srv.Client(), srv.URL+"/sub", topic)
	time.Sleep(400 * time.Millisecond)
	if _, err := Dial(ctx, srv.Client(), d.ReceiveFrom); err == nil {
		t.Error("an expired token connected")
	}
	// MaxConns: the third connection is refused (one is open above).
	var open []*Receiver
	for range 2 {
		d, err := Subscribe(ctx, srv.Client(), srv.URL+"/sub", topic)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Dial(ctx, srv.Client(), d.ReceiveFrom)
		if err == nil {
			open = append(open, r)
		} else if !strings.Contains(err.Error(), "503") {
			t.Errorf("over MaxConns: %v, want 503", err)
		}
	}
	if b.Conns() > 2 {
		t.Errorf("%d connections, MaxConns 2", b.Conns())
	}
	for _, r := range open {
		r.Close()
	}
}

// TestSubscriptionFlood: MaxPending outstanding tokens, then 429.
func TestSubscriptionFlood(t *testing.T) {
	_, srv := server(t, func(c *Config) { c.MaxPending = 5 })
	good := `{"type":"WebSocketChannel2023","topic":"` + topic + `"}`
	codes := map[int]int{}
	for range 20 {
		resp, err := srv.Client().Post(srv.URL+"/sub", ContentType, strings.NewReader(good))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	if codes[200] != 5 || codes[429] != 15 {
		t.Errorf("20 subscriptions, MaxPending 5: %v, want 5 × 200 and 15 × 429", codes)
	}
}

// TestSlowReaderDropped: a subscriber that never reads is disconnected;
// Publish never waits for it.
func TestSlowReaderDropped(t *testing.T) {
	b, srv := server(t, func(c *Config) { c.SendBuffer = 4 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := Subscribe(ctx, srv.Client(), srv.URL+"/sub", topic)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Dial(ctx, srv.Client(), d.ReceiveFrom)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	big := act("http://127.0.0.1/" + strings.Repeat("x", 32<<10))
	start := time.Now()
	for i := 0; b.Conns() > 0; i++ {
		if i > 100000 {
			t.Fatal("the never-reading subscriber was not dropped")
		}
		b.Publish(big, topic)
		if i%100 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	t.Logf("dropped after %s", time.Since(start))
	// What the client reads ends (a close for being too slow when the
	// close frame gets through, else the connection's end): it knows to
	// catch up.
	var err2 error
	n := 0
	for err2 == nil {
		_, err2 = r.Next(ctx)
		n++
	}
	if ctx.Err() != nil {
		t.Fatalf("the client read %d frames and no end", n)
	}
}

// hostile serves a WebSocket that sends what send writes.
func hostile(t *testing.T, send func(ctx context.Context, c *websocket.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		send(r.Context(), c)
		time.Sleep(100 * time.Millisecond)
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	return "ws://" + ln.Addr().String() + "/"
}

func TestHostileServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []struct {
		name string
		send func(context.Context, *websocket.Conn)
		bad  bool // ErrBadFrame rather than a read error
	}{
		{"garbage", func(ctx context.Context, c *websocket.Conn) {
			c.Write(ctx, websocket.MessageText, []byte("\x00garbage{"))
		}, true},
		{"no type", func(ctx context.Context, c *websocket.Conn) {
			c.Write(ctx, websocket.MessageText, []byte(`{"object":{"id":"x"}}`))
		}, true},
		{"binary", func(ctx context.Context, c *websocket.Conn) { c.Write(ctx, websocket.MessageBinary, []byte(`{}`)) }, true},
		{"huge", func(ctx context.Context, c *websocket.Conn) {
			c.Write(ctx, websocket.MessageText, bytes.Repeat([]byte(" "), 10<<20))
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Dial(ctx, nil, hostile(t, c.send))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			_, err = r.Next(ctx)
			if err == nil || errors.Is(err, ErrBadFrame) != c.bad {
				t.Fatalf("Next: %v", err)
			}
		})
	}
}

func TestSubscribeRefusesOtherHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ContentType)
		json.NewEncoder(w).Encode(Description{ID: "x", Type: ChannelType, Topic: topic, ReceiveFrom: "ws://127.0.0.2:1/steal"})
	})}}
	srv.Start()
	defer srv.Close()
	if _, err := Subscribe(context.Background(), srv.Client(), srv.URL, topic); err == nil {
		t.Fatal("a receiveFrom on another host was accepted")
	}
}

func FuzzParseActivity(f *testing.F) {
	f.Add([]byte(`{"type":"Update","object":{"id":"http://127.0.0.1/a","digest":"md5:00"},"endTime":"2026-11-29T08:00:00Z"}`))
	f.Add([]byte(`{"type":""}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseActivity(b)
		if err == nil && a.Type == "" {
			t.Fatal("an activity without a type was accepted")
		}
	})
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"type":"WebSocketChannel2023","topic":"` + topic + `"}`))
	f.Add([]byte(`{"type":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := parseRequest(b)
		if err == nil && (req.Topic == "" || !channelType(req.Type)) {
			t.Fatalf("accepted %+v", req)
		}
	})
}

// TestRetained: a record pushed before its documents are published is
// replayed to a connection opened meanwhile, and forgotten once settled;
// records nobody received (SkipIfIdle) make new connections wait (503)
// until they are settled. A subscriber that connects and then reads the
// Change Lists thus finds every change in one or the other.
func TestRetained(t *testing.T) {
	b, srv := server(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	connect := func() (*Receiver, error) {
		d, err := Subscribe(ctx, srv.Client(), srv.URL+"/sub", topic)
		if err != nil {
			t.Fatal(err)
		}
		return Dial(ctx, srv.Client(), d.ReceiveFrom)
	}
	if !b.SkipIfIdle("default", 3) {
		t.Fatal("SkipIfIdle with no connection did not skip")
	}
	if _, err := connect(); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("connection while records were skipped: %v, want 503", err)
	}
	b.Settle("default", 3)
	r, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	b.PublishRetained("default", 4, act("http://127.0.0.1/four"), topic)
	b.PublishRetained("default", 5, act("http://127.0.0.1/five"), "http://127.0.0.1/other-topic")
	r2, err := connect() // opened before 4 and 5 are settled: 4 is replayed
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range []*Receiver{r, r2} {
		a, err := rr.Next(ctx)
		if err != nil || a.Object.ID != "http://127.0.0.1/four" {
			t.Fatalf("got %v %v, want four", a, err)
		}
	}
	b.Settle("default", 5)
	b.PublishRetained("default", 6, act("http://127.0.0.1/six"), topic)
	r3, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	if a, err := r3.Next(ctx); err != nil || a.Object.ID != "http://127.0.0.1/six" {
		t.Fatalf("after settling 5: %v %v, want six only", a, err)
	}
	for _, rr := range []*Receiver{r, r2, r3} {
		rr.Close()
	}
}

func FuzzFromNotification(f *testing.F) {
	f.Add([]byte(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="change-notification" from="2026-11-29T08:00:00Z" until="2026-11-29T08:00:01Z"/><url><loc>http://127.0.0.1/a</loc><rs:md change="deleted"/></url></urlset>`))
	f.Add([]byte(`<urlset/>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		acts, _ := FromNotification(b)
		for _, a := range acts {
			if a.Object == nil || a.Type == "" {
				t.Fatalf("activity %+v", a)
			}
		}
	})
}

// TestOriginPatterns: a page of an origin named in OriginPatterns may
// connect; others may not.
func TestOriginPatterns(t *testing.T) {
	_, srv := server(t, func(c *Config) { c.OriginPatterns = []string{"*.trusted.example"} })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []struct {
		origin string
		want   int
	}{{"https://app.trusted.example", 101}, {"https://trusted.example.evil", 403}, {"null", 403}} {
		d, err := Subscribe(ctx, srv.Client(), srv.URL+"/sub", topic)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, "http"+strings.TrimPrefix(d.ReceiveFrom, "ws"), nil)
		for k, v := range map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
			"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Origin": c.origin} {
			req.Header.Set(k, v)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Origin %s: %d, want %d", c.origin, resp.StatusCode, c.want)
		}
	}
}
