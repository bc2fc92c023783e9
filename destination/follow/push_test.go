package follow_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/destination/follow"
	"github.com/resourcesync-go/resourcesync/feed/activity"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/notify"
	"github.com/resourcesync-go/resourcesync/wspush"
)

// connTracker records a listener's connections, to cut them all (the
// WebSockets included, which http.Server forgets once hijacked).
type connTracker struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *connTracker) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *connTracker) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

// startPush serves a Source with the live push and no hub under
// /data/, and follows it into a new DEST with Push and no callback. The
// Change Lists are polled once an hour: only the push (or a catch-up it
// asks for) brings changes in time. extra, if set, replaces handlers.
func startPush(t *testing.T, extra func(base string, h map[string]http.Handler)) (*rig, *connTracker) {
	t.Helper()
	return startPushWith(t, extra, nil)
}

// startPushWith is startPush with hook run on the Source's configuration
// once the push is set up.
func startPushWith(t *testing.T, extra func(base string, h map[string]http.Handler), hook func(*source.Config)) (*rig, *connTracker) {
	t.Helper()
	t.Cleanup(follow.SetPushBackoff(50 * time.Millisecond))
	r := &rig{dir: t.TempDir(), dest: t.TempDir(), out: &lines{}}
	os.WriteFile(filepath.Join(r.dir, "first.txt"), []byte("first"), 0o644)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &connTracker{Listener: l}
	base := "http://" + ln.Addr().String() + "/data/"
	cfg := source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "default", Dir: r.dir}}, StateDir: t.TempDir(), ChangeListPeriod: time.Hour}
	p, err := notify.SetupPush(&cfg, wspush.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if hook != nil {
		hook(&cfg)
	}
	src, err := source.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.src = src
	p.Bind(src)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := src.Update(ctx); err != nil {
		t.Fatal(err)
	}
	h := p.Handlers()
	if extra != nil {
		extra(base, h)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: src.Handler(h)}}
	srv.Start()

	c, _ := testnet.Client(t)
	m, err := destination.Open(ctx, base, destination.Options{Dest: r.dest, Client: c})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	fctx, cancelFollow := context.WithCancel(ctx)
	go func() {
		done <- follow.Run(fctx, m, follow.Options{Client: c, Push: true, PollInterval: time.Hour, Say: r.out.say})
	}()
	var once, onceFollow sync.Once
	r.base = base
	r.stopFollow = func() {
		onceFollow.Do(func() {
			cancelFollow()
			if err := <-done; err != nil {
				t.Errorf("follow: %v", err)
			}
			m.Close()
		})
	}
	r.stop = func() {
		once.Do(func() {
			r.stopFollow()
			cancel()
			p.Close()
			srv.Close()
			src.Close()
		})
	}
	t.Cleanup(r.stop)
	return r, ln
}

// TestPushFollow: without a callback, changes arrive over the live push
// (one update's several records together, deletions too); after the
// connection is cut, the follower reconnects and catches up with what
// changed meanwhile.
func TestPushFollow(t *testing.T) {
	r, ln := startPush(t, nil)
	waitLine(t, r, "live push for set default from")
	r.wait(t, "first.txt", "first")

	for _, n := range []string{"a.txt", "b.txt", "c.txt"} {
		os.WriteFile(filepath.Join(r.dir, n), []byte(n), 0o644)
	}
	r.change(t, "d.txt", "d")
	for _, n := range []string{"a.txt", "b.txt", "c.txt"} {
		r.wait(t, n, n)
	}
	r.wait(t, "d.txt", "d")
	os.Remove(filepath.Join(r.dir, "a.txt"))
	r.change(t, "b.txt", "b2")
	r.wait(t, "b.txt", "b2")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(r.dest, "a.txt")); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a.txt not deleted\n%s", r.out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !r.out.has("notification on default") {
		t.Fatalf("nothing came by the push:\n%s", r.out)
	}

	// Cut every connection; change while the follower is away.
	ln.cut()
	r.change(t, "while-away.txt", "away")
	r.wait(t, "while-away.txt", "away")
	waitLine(t, r, "reconnecting")
	// Connected again: pushed once more.
	deadline = time.Now().Add(10 * time.Second)
	for n := 0; ; n++ {
		name := "after" + string(rune('a'+n%26)) + ".txt"
		r.change(t, name, name)
		r.wait(t, name, name)
		if strings.Count(r.out.String(), "live push for set default from") >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never reconnected:\n%s", r.out)
		}
	}
}

// TestPushBesidePlainSet: a Source whose first set offers the live push
// and whose second offers no change notifications at all. The follower
// marks the plain set as polled while the push loop of the first already
// runs (go test -race: both write the same map).
func TestPushBesidePlainSet(t *testing.T) {
	plain := t.TempDir()
	os.WriteFile(filepath.Join(plain, "p.txt"), []byte("plain"), 0o644)
	r, _ := startPushWith(t, nil, func(cfg *source.Config) {
		cfg.Sets = append(cfg.Sets, source.SetConfig{Name: "plain", Dir: plain})
		links := cfg.CapabilityLinks
		cfg.CapabilityLinks = func(set string) []rs.Link {
			if set == "plain" {
				return nil
			}
			return links(set)
		}
	})
	waitLine(t, r, "live push for set default from")
	waitLine(t, r, "set plain offers no change notifications")
	// Two sets: each is mirrored into a folder of its own name.
	r.change(t, "d.txt", "d")
	r.wait(t, filepath.Join("default", "d.txt"), "d")
	if b, _ := os.ReadFile(filepath.Join(r.dest, "plain", "p.txt")); string(b) != "plain" {
		t.Fatalf("plain/p.txt = %q", b)
	}
}

// TestPushHostileSource: a push endpoint that sends garbage, a frame too
// large, and activities for another origin, outside the mirrored base,
// with dot segments or from the future: each is ignored (with a line) or
// ends the connection, nothing off-origin is ever fetched, and the
// follower goes on applying the genuine activity that follows.
func TestPushHostileSource(t *testing.T) {
	var offHits atomic.Int64
	off, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	offSrv := &httptest.Server{Listener: off, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		offHits.Add(1)
		w.Write([]byte("stolen"))
	})}}
	offSrv.Start()
	defer offSrv.Close()

	var conns atomic.Int64
	var genuine atomic.Pointer[activity.Activity]
	r, _ := startPush(t, func(base string, h map[string]http.Handler) {
		wsBase := "ws" + strings.TrimPrefix(base, "http")
		h[notify.PushSubscribePath] = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if strings.HasSuffix(req.URL.Path, "/receive") {
				c, err := websocket.Accept(w, req, nil)
				if err != nil {
					return
				}
				defer c.CloseNow()
				ctx := req.Context()
				switch conns.Add(1) {
				case 1:
					c.Write(ctx, websocket.MessageText, []byte("{not json"))
				case 2:
					c.Write(ctx, websocket.MessageText, []byte(`{"type":"Update","pad":"`+strings.Repeat("x", 1<<20)+`"}`))
				default:
					for genuine.Load() == nil {
						time.Sleep(10 * time.Millisecond)
					}
					now := time.Now().UTC()
					digest := "md5:" + strings.Repeat("0", 32)
					for _, a := range []activity.Activity{
						{Type: "Update", Object: &activity.Ref{ID: "http://" + off.Addr().String() + "/data/x.txt", Digest: digest}, EndTime: now},
						{Type: "Create", Object: &activity.Ref{ID: strings.TrimSuffix(base, "data/") + "other/y.txt", Digest: digest}, EndTime: now},
						{Type: "Create", Object: &activity.Ref{ID: base + "%2e%2e/z.txt", Digest: digest}, EndTime: now},
						{Type: "Create", Object: &activity.Ref{ID: base + "future.txt", Digest: digest}, EndTime: now.Add(24 * time.Hour)},
						{Type: "Delete", Object: &activity.Ref{ID: "http://" + off.Addr().String() + "/data/first.txt"}, EndTime: now},
						*genuine.Load(),
					} {
						b, _ := json.Marshal(a)
						c.Write(ctx, websocket.MessageText, b)
					}
					<-ctx.Done()
				}
				return
			}
			w.Header().Set("Content-Type", wspush.ContentType)
			json.NewEncoder(w).Encode(wspush.Description{ID: "urn:x", Type: wspush.ChannelType, Topic: "x", ReceiveFrom: wsBase + ".resourcesync/push/receive?token=t"})
		})
	})
	waitLine(t, r, "live push for set default from")
	// Garbage and the huge frame ended the first two connections.
	for conns.Load() < 3 {
		time.Sleep(10 * time.Millisecond)
	}
	// The genuine change: published (so the Source serves it), announced
	// with its digest.
	body := "genuine"
	os.WriteFile(filepath.Join(r.dir, "genuine.txt"), []byte(body), 0o644)
	sum := md5.Sum([]byte(body))
	size := int64(len(body))
	genuine.Store(&activity.Activity{Type: "Create", EndTime: time.Now().UTC().Add(time.Second),
		Object: &activity.Ref{ID: r.base + "genuine.txt", Size: &size, Digest: "md5:" + hex.EncodeToString(sum[:])}})
	if _, err := r.src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.wait(t, "genuine.txt", body)
	r.stop()
	if n := offHits.Load(); n != 0 {
		t.Errorf("%d requests to another origin", n)
	}
	for _, n := range []string{"x.txt", "y.txt", "z.txt", "future.txt", "../z.txt", "../other/y.txt"} {
		if _, err := os.Stat(filepath.Join(r.dest, n)); err == nil {
			t.Errorf("%s written", n)
		}
	}
	if _, err := os.Stat(filepath.Join(r.dest, "first.txt")); err != nil {
		t.Errorf("first.txt deleted by another origin's Delete: %v", err)
	}
	for _, want := range []string{"is outside", "in the future", "frame is not an activity"} {
		if !r.out.has(want) {
			t.Errorf("no %q in:\n%s", want, r.out)
		}
	}
}
