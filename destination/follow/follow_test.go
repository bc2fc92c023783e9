package follow_test

import (
	"context"
	"fmt"
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

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/destination/follow"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/notify"
	"github.com/resourcesync-go/resourcesync/websub/hub"
)

// flakyHub is a real hub behind a proxy that can lose the next publish
// (acknowledging it without passing it on) or be down altogether.
type flakyHub struct {
	url  string
	h    *hub.Hub
	drop atomic.Bool
	down atomic.Bool
}

func startHub(t *testing.T) *flakyHub { t.Helper(); return startHubWith(t, true) }

// startHubWith starts the hub, allowing loopback callbacks or not.
func startHubWith(t *testing.T, allowPrivate bool) *flakyHub {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fh := &flakyHub{url: "http://" + ln.Addr().String() + "/hub"}
	h, err := hub.Open(hub.Config{StateDir: t.TempDir(), URL: fh.url, AllowPrivateCallbacks: allowPrivate, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	fh.h = h
	ctx, cancel := context.WithCancel(context.Background())
	go h.Run(ctx)
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fh.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if r.Method == http.MethodPost && strings.HasPrefix(r.Header.Get("Content-Type"), "application/xml") && fh.drop.CompareAndSwap(true, false) {
			w.WriteHeader(http.StatusAccepted) // lost
			return
		}
		h.ServeHTTP(w, r)
	})}}
	srv.Start()
	t.Cleanup(func() { srv.Close(); cancel(); h.Close() })
	return fh
}

type rig struct {
	dir, dest, base string
	src             *source.Source
	out             *lines
	stop            func()
	// stopFollow ends the follower and releases DEST; the Source runs on.
	stopFollow func()
}

type lines struct {
	mu sync.Mutex
	l  []string
}

func (l *lines) say(format string, args ...any) {
	l.mu.Lock()
	l.l = append(l.l, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *lines) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.l {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.l, "\n")
}

// start serves a Source publishing to fh and follows it into a new DEST.
func start(t *testing.T, fh *flakyHub) *rig { t.Helper(); return startWith(t, fh, nil) }

// startWith starts a rig whose follow.Options edit changes.
func startWith(t *testing.T, fh *flakyHub, edit func(*follow.Options)) *rig {
	t.Helper()
	r := &rig{dir: t.TempDir(), dest: t.TempDir(), out: &lines{}}
	os.WriteFile(filepath.Join(r.dir, "first.txt"), []byte("first"), 0o644)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	cfg := source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "default", Dir: r.dir}}, StateDir: t.TempDir(), ChangeListPeriod: time.Hour}
	svc, err := notify.Setup(&cfg, notify.ServiceConfig{ExternalHub: fh.url, RetryInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	src, err := source.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.src = src
	ctx, cancel := context.WithCancel(context.Background())
	if err := svc.Bind(ctx, src); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Update(ctx); err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: src.Handler(svc.Handlers())}}
	srv.Start()
	svc.Run(ctx, src)

	c, _ := testnet.Client(t)
	m, err := destination.Open(ctx, base, destination.Options{Dest: r.dest, Client: c})
	if err != nil {
		t.Fatal(err)
	}
	cln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	csrv := &httptest.Server{Listener: cln, Config: &http.Server{Handler: mux}}
	csrv.Start()
	done := make(chan error, 1)
	fctx, cancelFollow := context.WithCancel(ctx)
	fopt := follow.Options{Mux: mux, CallbackBase: "http://" + cln.Addr().String() + "/", Client: c,
		PollInterval: 200 * time.Millisecond, Say: r.out.say}
	if edit != nil {
		edit(&fopt)
	}
	go func() { done <- follow.Run(fctx, m, fopt) }()
	var once, onceFollow sync.Once
	r.base = base
	r.stopFollow = func() {
		onceFollow.Do(func() {
			cancelFollow()
			if err := <-done; err != nil {
				t.Errorf("follow: %v", err)
			}
			m.Close()
			csrv.Close()
		})
	}
	r.stop = func() {
		once.Do(func() {
			r.stopFollow()
			cancel()
			srv.Close()
			svc.Close()
			src.Close()
		})
	}
	t.Cleanup(r.stop)
	return r
}

func (r *rig) change(t *testing.T, name, body string) {
	t.Helper()
	time.Sleep(2 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(r.dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) wait(t *testing.T, name, body string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(r.dest, name))
		if string(b) == body {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never arrived with %q (has %q)\n%s", name, body, b, r.out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitLine(t *testing.T, r *rig, s string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !r.out.has(s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in:\n%s", s, r.out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLostNotification: a notification the hub never delivers leaves a
// gap in from/until; the next one reveals it and the follower catches up
// from the Change Lists.
func TestLostNotification(t *testing.T) {
	fh := startHub(t)
	r := start(t, fh)
	waitLine(t, r, "subscribed to")
	r.wait(t, "first.txt", "first")
	pushUntilNotified(t, r, "a", "a")

	fh.drop.Store(true)
	r.change(t, "lost.txt", "lost")
	r.change(t, "after.txt", "after")
	r.wait(t, "lost.txt", "lost")
	r.wait(t, "after.txt", "after")
	waitLine(t, r, "catching up from the Change Lists")
}

// TestHubOutage: while the hub is unreachable the follower polls the
// Change Lists; once it is back, it subscribes and changes are pushed.
func TestHubOutage(t *testing.T) {
	fh := startHub(t)
	fh.down.Store(true)
	r := start(t, fh)
	waitLine(t, r, "unreachable")
	r.change(t, "polled.txt", "polled")
	r.wait(t, "polled.txt", "polled")
	if r.out.has("notification on") {
		t.Fatalf("a notification while the hub was down:\n%s", r.out)
	}
	fh.down.Store(false)
	waitLine(t, r, "subscribed to")
	pushUntilNotified(t, r, "pushed", "pushed")
	r.stop()
	if !r.out.has("catch-up (poll)") {
		t.Errorf("no polling while the hub was down:\n%s", r.out)
	}
}

// TestNotifiedFileDeletedLater: a file that arrived by notification is
// recorded, so that once the follower has stopped, a plain sync mirrors
// its deletion at the Source instead of keeping it as someone else's
// (issue 9, item 1).
func TestNotifiedFileDeletedLater(t *testing.T) {
	fh := startHub(t)
	r := start(t, fh)
	waitLine(t, r, "subscribed to")
	r.wait(t, "first.txt", "first")
	p := pushUntilNotified(t, r, "p", "pushed")
	r.stopFollow()

	if err := os.Remove(filepath.Join(r.dir, p)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	c, _ := testnet.Client(t)
	rep, err := destination.Sync(context.Background(), r.base, destination.Options{Dest: r.dest, Client: c})
	if err != nil {
		t.Fatal(err)
	}
	sr := rep.Sets[0]
	if sr.Deleted != 1 || sr.Kept != 0 || sr.Failed != 0 {
		t.Fatalf("after the follower: %s\n%s", sr.Summary(false), r.out)
	}
	if _, err := os.Stat(filepath.Join(r.dest, p)); !os.IsNotExist(err) {
		t.Fatalf("%s still in DEST: %v", p, err)
	}
}

// TestHubRefusesCallback: a real hub that does not call back loopback
// addresses (its default) answers the subscription with 400. The
// follower says that the hub refused the callback and how to allow it,
// not that the hub is down, polls meanwhile, and does not try to
// unsubscribe what was never subscribed (issue 19, 5d).
func TestHubRefusesCallback(t *testing.T) {
	fh := startHubWith(t, false)
	r := start(t, fh)
	waitLine(t, r, "refused the callback")
	r.change(t, "polled.txt", "polled")
	r.wait(t, "polled.txt", "polled")
	r.stopFollow()
	out := r.out.String()
	for _, want := range []string{"--allow-private-callbacks", "--callback-url", "polling the Change Lists"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	for _, bad := range []string{"unreachable", "unsubscribe:"} {
		if strings.Contains(out, bad) {
			t.Errorf("%q in:\n%s", bad, out)
		}
	}
	t.Logf("%s", out)
}

// pushUntilNotified changes files (PREFIX0.txt, PREFIX1.txt, …) until one
// arrives by notification and returns its name: the catch-up that
// follows a subscription may fetch a change made at once, and its
// notification then has nothing left to do and says nothing (a CI flake
// under load).
func pushUntilNotified(t *testing.T, r *rig, prefix, content string) string {
	t.Helper()
	for i := 0; ; i++ {
		if i == 5 {
			t.Fatalf("5 changes after subscribing, none pushed:\n%s", r.out)
		}
		name := fmt.Sprintf("%s%d.txt", prefix, i)
		r.change(t, name, content)
		r.wait(t, name, content)
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
			if r.out.has("notification on default") {
				return name
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestFailedCatchupRetried: a catch-up that fails while the hub is up is
// tried again at the next poll interval, not only at the tenth (an
// aggregator's interval is an hour: ten would leave the mirror behind
// for ten hours).
func TestFailedCatchupRetried(t *testing.T) {
	fh := startHub(t)
	var syncs atomic.Int32
	r := startWith(t, fh, func(o *follow.Options) {
		o.PollInterval = time.Second // the retry must come before the tenth tick
		o.Around = func(ctx context.Context, kind, why string, do func(context.Context) (*destination.Report, error)) (*destination.Report, error) {
			if kind == "sync" && syncs.Add(1) <= 2 {
				return nil, fmt.Errorf("injected failure of catch-up %d (%s)", syncs.Load(), why)
			}
			return do(ctx)
		}
	})
	waitLine(t, r, "subscribed to")
	r.wait(t, "first.txt", "first")
	if !r.out.has("injected failure") {
		t.Fatalf("no failed catch-up:\n%s", r.out)
	}
	waitLine(t, r, "catch-up (retry)") // not a poll of the tenth tick
}
