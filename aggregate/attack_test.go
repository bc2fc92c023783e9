package aggregate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/boltstore"
	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// staticSource serves a small handmade ResourceSync Source on loopback:
// a Source Description, a Capability List (extra is added to it: a
// hostile test's entries), a Resource List of one file. It returns the
// base URL.
func staticSource(t *testing.T, extra string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	const ns = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"`
	docs := map[string]string{
		"/.well-known/resourcesync": `<?xml version="1.0"?><urlset ` + ns + `><rs:md capability="description"/>` +
			`<url><loc>` + base + `cap.xml</loc><rs:md capability="capabilitylist"/></url></urlset>`,
		"/cap.xml": `<?xml version="1.0"?><urlset ` + ns + `><rs:ln rel="up" href="` + base + `.well-known/resourcesync"/><rs:md capability="capabilitylist"/>` +
			`<url><loc>` + base + `rl.xml</loc><rs:md capability="resourcelist"/></url>` + strings.ReplaceAll(extra, "BASE/", base) + `</urlset>`,
		"/rl.xml": `<?xml version="1.0"?><urlset ` + ns + `><rs:ln rel="up" href="` + base + `cap.xml"/><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>` +
			`<url><loc>` + base + `a.txt</loc><rs:md length="5"/></url></urlset>`,
		"/a.txt": "hello",
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.HasSuffix(r.URL.Path, ".txt") {
			w.Header().Set("Content-Type", "text/plain")
		} else {
			w.Header().Set("Content-Type", "application/xml")
		}
		fmt.Fprint(w, d)
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	return base
}

// testAggregator makes an Aggregator on a bolt store in a temporary
// directory, dialing loopback only, its callbacks served on loopback.
// starts counts the run-start events per Source.
func testAggregator(t *testing.T, mod func(*Options)) (a *Aggregator, starts func(id string) int) {
	t.Helper()
	root := t.TempDir()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "agg.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := testnet.Client(t)
	var mu sync.Mutex
	n := map[string]int{}
	var cb http.Handler
	cbSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { cb.ServeHTTP(w, r) }))
	t.Cleanup(cbSrv.Close)
	opt := Options{Root: root, Store: st, LeaseTTL: 3 * time.Second, Jitter: 0, Interval: time.Hour,
		Client:       func(Source) (*http.Client, error) { return c, nil },
		HubClient:    c,
		CallbackBase: cbSrv.URL + "/",
		Events: func(e Event) {
			if e.Kind == EventRunStart {
				mu.Lock()
				n[e.Source]++
				mu.Unlock()
			}
		}}
	if mod != nil {
		mod(&opt)
	}
	a, err = New(opt)
	if err != nil {
		t.Fatal(err)
	}
	cb = a.Callbacks()
	return a, func(id string) int {
		mu.Lock()
		defer mu.Unlock()
		return n[id]
	}
}

// runAggregator runs a until the test ends.
func runAggregator(t *testing.T, a *Aggregator) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("Run did not return")
		}
		a.opt.Store.Close()
	})
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func row(a *Aggregator, id string) SourceStatus {
	for _, s := range a.Snapshot().Sources {
		if s.ID == id {
			return s
		}
	}
	return SourceStatus{}
}

// TestFollowHostileHubLink: a --follow Source whose Capability List
// advertises a change-notification channel with a hub that is no http(s)
// URL. Its set is polled (as a set without notifications); the
// aggregator does not open and catch it up again and again.
func TestFollowHostileHubLink(t *testing.T) {
	base := staticSource(t, `<url><loc>BASE/notify</loc><rs:md capability="change-notification"/><rs:ln rel="hub" href="ftp://127.0.0.1/hub"/></url>`)
	a, starts := testAggregator(t, nil)
	a.SetSources([]Source{{ID: "hostile", URL: base, Dest: "hostile", Follow: true}})
	runAggregator(t, a)
	waitUntil(t, "the first run", func() bool { return row(a, "hostile").Runs >= 1 })
	time.Sleep(time.Second)
	if n := starts("hostile"); n != 1 {
		t.Errorf("%d runs within a second of an interval of an hour, want 1 (the catch-up): %+v", n, row(a, "hostile"))
	}
	if r := row(a, "hostile"); r.State != StateFollowing || r.Failures != 0 {
		t.Errorf("state %s, %d failures (%s), want following with its set polled", r.State, r.Failures, r.LastError)
	}
}

// TestSetSourcesMovedLines: a reload that only moves the lines (a
// comment added above them) while the Sources run: no data race (go test
// -race) between the reload and the loops reading their Source.
func TestSetSourcesMovedLines(t *testing.T) {
	base := staticSource(t, "")
	a, starts := testAggregator(t, func(o *Options) { o.Interval = 20 * time.Millisecond })
	src := []Source{{ID: "one", URL: base, Dest: "one", Line: 1}, {ID: "two", URL: base, Dest: "two", Line: 2}}
	a.SetSources(src)
	runAggregator(t, a)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 3; !stop.Load(); i++ {
			moved := []Source{src[0], src[1]}
			moved[0].Line, moved[1].Line = i, i+1
			a.SetSources(moved)
			a.Snapshot()
			time.Sleep(time.Millisecond)
		}
	}()
	waitUntil(t, "runs during the reloads", func() bool { return starts("one") >= 3 && starts("two") >= 3 })
	stop.Store(true)
	wg.Wait()
	if r := row(a, "one"); r.Succeeded == 0 {
		t.Errorf("no run of one succeeded: %+v", r)
	}
}

// tokenSource is a hostile Source that echoes the bearer token it is
// sent into the URLs it publishes: its Resource List is linked as
// rl.xml?t=TOKEN (answered 500 when failList) and lists a.txt?t=TOKEN
// (answered 404).
func tokenSource(t *testing.T, failList bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	const ns = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"`
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := url.QueryEscape(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		w.Header().Set("Content-Type", "application/xml")
		switch r.URL.Path {
		case "/.well-known/resourcesync":
			fmt.Fprint(w, `<?xml version="1.0"?><urlset `+ns+`><rs:md capability="description"/><url><loc>`+base+`cap.xml</loc><rs:md capability="capabilitylist"/></url></urlset>`)
		case "/cap.xml":
			fmt.Fprint(w, `<?xml version="1.0"?><urlset `+ns+`><rs:ln rel="up" href="`+base+`.well-known/resourcesync"/><rs:md capability="capabilitylist"/>`+
				`<url><loc>`+base+`rl.xml?t=`+tok+`</loc><rs:md capability="resourcelist"/></url></urlset>`)
		case "/rl.xml":
			if failList {
				http.Error(w, "no", http.StatusInternalServerError)
				return
			}
			fmt.Fprint(w, `<?xml version="1.0"?><urlset `+ns+`><rs:ln rel="up" href="`+base+`cap.xml"/><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>`+
				`<url><loc>`+base+`a.txt?t=`+tok+`</loc></url></urlset>`)
		default:
			http.NotFound(w, r)
		}
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	return base
}

// TestTokenNeverShown: Sources that echo their bearer token into the URLs
// they publish (a resource that fails, a Resource List that fails after
// the follower opened the Source): the token appears in no event, no
// snapshot (status page, status.json) and no Source's page.
func TestTokenNeverShown(t *testing.T) {
	const token = "s3cr3t-t0ken-4242"
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events strings.Builder
	a, _ := testAggregator(t, func(o *Options) {
		o.Client, o.HubClient = nil, nil // the default client: the one that redacts
		o.Events = func(e Event) {
			b, _ := json.Marshal(e)
			mu.Lock()
			events.Write(b)
			events.WriteByte('\n')
			mu.Unlock()
		}
	})
	a.SetSources([]Source{
		{ID: "poll", URL: tokenSource(t, false), Dest: "poll", BearerTokenFile: tokFile},
		{ID: "follow", URL: tokenSource(t, true), Dest: "follow", Follow: true, BearerTokenFile: tokFile},
	})
	runAggregator(t, a)
	waitUntil(t, "a failed run of each", func() bool {
		return row(a, "poll").Runs >= 1 && row(a, "follow").Runs >= 1
	})
	snap, _ := json.Marshal(a.Snapshot())
	if !strings.Contains(string(snap), "a.txt") || !strings.Contains(string(snap), "rl.xml") {
		t.Fatalf("the failures do not name the URLs (the test shows nothing): %s", snap)
	}
	shown := map[string]string{"snapshot": string(snap)}
	mu.Lock()
	shown["events"] = events.String()
	mu.Unlock()
	for _, id := range []string{"poll", "follow"} {
		rec := httptest.NewRecorder()
		a.Detail(id).ServeHTTP(rec, httptest.NewRequest("GET", "/status.json", nil))
		shown[id+"'s page"] = rec.Body.String()
	}
	for what, s := range shown {
		if strings.Contains(s, token) {
			t.Errorf("the token is in the %s:\n%s", what, s)
		}
	}
}

// countingStore counts StartRun calls on a real store.
type countingStore struct {
	aggstore.Store
	starts atomic.Int64
}

func (s *countingStore) StartRun(ctx context.Context, r aggstore.Run) (int64, error) {
	s.starts.Add(1)
	return s.Store.StartRun(ctx, r)
}

// TestLeaseTakenBetweenRounds: another node takes a Source's lease (this
// node's expired: a pause, a store outage) between two lease rounds. The
// next run's StartRun says ErrNotHolder; the Source stops here at once
// instead of trying again and again until the next lease round.
func TestLeaseTakenBetweenRounds(t *testing.T) {
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	bs, err := boltstore.Open(filepath.Join(t.TempDir(), "agg.db"), &boltstore.Options{NoSync: true, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: bs}
	a, starts := testAggregator(t, func(o *Options) {
		o.Store.Close()
		o.Store, o.LeaseTTL, o.Interval = cs, time.Minute, 50*time.Millisecond
	})
	a.SetSources([]Source{{ID: "one", URL: staticSource(t, ""), Dest: "one"}})
	runAggregator(t, a)
	waitUntil(t, "a run", func() bool { return starts("one") >= 1 })
	// This node's lease expires (the store's clock jumps) and another
	// node takes the Source.
	skew.Store(int64(10 * time.Minute))
	if ok, err := bs.Claim(context.Background(), "other", "one", time.Hour); err != nil || !ok {
		t.Fatalf("other node's claim: %v, %v", ok, err)
	}
	before := cs.starts.Load()
	time.Sleep(500 * time.Millisecond)
	if n := cs.starts.Load() - before; n > 2 {
		t.Errorf("%d runs tried within half a second by a node that lost the lease (the next lease round is 20 s away)", n)
	}
	// A run that started before the takeover may still be ending on a
	// loaded machine; then the Source shows as elsewhere.
	waitUntil(t, "the Source shown as held elsewhere", func() bool { return row(a, "one").State == StateElsewhere })
}

// slowFinishStore holds every FinishRun until release is closed.
type slowFinishStore struct {
	aggstore.Store
	release chan struct{}
	waiting atomic.Int64
}

func (s *slowFinishStore) FinishRun(ctx context.Context, r aggstore.Run, next aggstore.Schedule) error {
	s.waiting.Add(1)
	<-s.release
	return s.Store.FinishRun(ctx, r, next)
}

// TestChangedTwiceWhileEnding: a Source's line changes twice while its
// old loop is still ending a run (recording it). The newest loop starts
// only after the oldest released DEST (the middle one, stopped before it
// began, must not let it through), and the interrupted run says why.
func TestChangedTwiceWhileEnding(t *testing.T) {
	// A Source whose Resource List never comes: the run hangs until
	// it is cancelled.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	var fs *slowFinishStore
	a, starts := testAggregator(t, func(o *Options) {
		fs = &slowFinishStore{Store: o.Store, release: make(chan struct{})}
		o.Store = fs
	})
	released := false
	t.Cleanup(func() {
		if !released {
			close(fs.release)
		}
	})
	s := Source{ID: "one", URL: "http://" + ln.Addr().String() + "/", Dest: "one", Interval: time.Hour}
	a.SetSources([]Source{s})
	runAggregator(t, a)
	waitUntil(t, "the first run", func() bool { return starts("one") == 1 })
	s.Interval = 2 * time.Hour
	a.SetSources([]Source{s}) // the run is cancelled, its loop records it
	waitUntil(t, "the old loop recording its run", func() bool { return fs.waiting.Load() == 1 })
	s.Interval = 3 * time.Hour
	a.SetSources([]Source{s})
	time.Sleep(300 * time.Millisecond)
	if n := starts("one"); n != 1 {
		t.Errorf("%d runs started while the first loop still held DEST, want 1", n)
	}
	close(fs.release)
	released = true
	waitUntil(t, "the newest loop's run", func() bool { return starts("one") == 2 })
	runs, err := fs.Runs(context.Background(), "one", 0)
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs %+v, %v", runs, err)
	}
	if first := runs[1]; !strings.Contains(first.Error, "changed or removed") {
		t.Errorf("the interrupted run's error %q, want it to say the line was changed or removed", first.Error)
	}
}

// TestCatchupNotStarvedByPolls: a follower's catch-up (a gap, a
// subscription) asks for a worker now, though its Source's next poll is
// an hour away; with every worker busy, polls that became due after it
// asked do not go first.
func TestCatchupNotStarvedByPolls(t *testing.T) {
	a, _ := testAggregator(t, func(o *Options) { o.Workers = 1 })
	defer a.opt.Store.Close()
	ctx := context.Background()
	for _, id := range []string{"follower", "poller"} {
		if ok, err := a.opt.Store.Claim(ctx, a.opt.Node, id, time.Hour); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	now := time.Now()
	follower := a.newState(Source{ID: "follower", URL: "http://127.0.0.1:1/", Dest: "follower"})
	follower.sched.Next = now.Add(time.Hour) // its next poll
	poller := a.newState(Source{ID: "poller", URL: "http://127.0.0.2:1/", Dest: "poller"})
	follower.held, poller.held = true, true                   // runOnce runs only what this node holds
	release, err := a.slots.acquire(ctx, "busy", time.Time{}) // every worker busy
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	ran := func(id string) func(context.Context) (*destination.Report, error) {
		return func(context.Context) (*destination.Report, error) {
			mu.Lock()
			order = append(order, id)
			mu.Unlock()
			return &destination.Report{}, nil
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a.runOnce(ctx, follower, "gap in notifications", ran("follower")) }()
	waitUntil(t, "the catch-up queued", func() bool { _, w := a.slots.load(); return w == 1 })
	poller.sched.Next = time.Now() // due after the catch-up asked
	go func() { defer wg.Done(); a.runOnce(ctx, poller, "poll", ran("poller")) }()
	waitUntil(t, "the poll queued", func() bool { _, w := a.slots.load(); return w == 2 })
	release()
	wg.Wait()
	if strings.Join(order, ",") != "follower,poller" {
		t.Errorf("order %v: the catch-up waited for a poll due after it", order)
	}
}

// TestCallbacksRouting: Callbacks sends a request to the follower of the
// Source whose key it names and to no other, under CallbackBase's path;
// odd paths (other keys after "..", encoded slashes, no set, a removed
// Source, very long) reach no other Source and never panic.
func TestCallbacksRouting(t *testing.T) {
	a, _ := testAggregator(t, func(o *Options) { o.CallbackBase = "http://127.0.0.1:1/cb/" })
	defer a.opt.Store.Close()
	a.SetSources([]Source{{ID: "a", URL: "http://127.0.0.1:1/", Dest: "a"}, {ID: "b", URL: "http://127.0.0.1:1/", Dest: "b"}})
	var mu sync.Mutex
	got := map[string][]string{}
	for _, id := range []string{"a", "b"} {
		mux := http.NewServeMux()
		mux.HandleFunc("/set", func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got[id] = append(got[id], r.URL.Path)
			mu.Unlock()
		})
		a.mu.Lock()
		a.srcs[id].mux = mux
		a.mu.Unlock()
	}
	ka, kb := a.srcs["a"].cbKey, a.srcs["b"].cbKey
	h := a.Callbacks()
	tests := []struct {
		path string
		to   string // the Source reached, "" none
	}{
		{"/cb/s/" + ka + "/set", "a"},
		{"/cb/s/" + kb + "/set", "b"},
		{"/cb/s/" + ka + "/../" + kb + "/set", ""},
		{"/cb/s/" + ka + "%2Fset", "a"},
		{"/cb/s/" + ka + "/", ""},
		{"/cb/s/" + ka, ""},
		{"/cb/s//set", ""},
		{"//cb/s/" + kb + "/set", ""},
		{"/cb/s/" + strings.Repeat("k", 1<<16) + "/set", ""},
		{"/cb/s/nokey/set", ""},
	}
	for _, tc := range tests {
		mu.Lock()
		clear(got)
		mu.Unlock()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "http://127.0.0.1:1/", strings.NewReader("x"))
		req.URL, _ = url.Parse("http://127.0.0.1:1" + tc.path)
		req.RequestURI = tc.path
		h.ServeHTTP(rec, req)
		mu.Lock()
		for id := range got {
			if id != tc.to {
				t.Errorf("%.80s reached Source %s, want %q", tc.path, id, tc.to)
			}
		}
		if tc.to != "" && len(got[tc.to]) != 1 {
			t.Errorf("%.80s: did not reach Source %s (%d)", tc.path, tc.to, rec.Code)
		}
		mu.Unlock()
	}
	a.SetSources([]Source{{ID: "b", URL: "http://127.0.0.1:1/", Dest: "b"}})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/cb/s/"+ka+"/set", strings.NewReader("x")))
	if rec.Code != http.StatusNotFound {
		t.Errorf("a removed Source's callback: %d, want 404", rec.Code)
	}
}

// slowForgetStore takes its time to forget a Source.
type slowForgetStore struct {
	aggstore.Store
	forgot atomic.Bool
}

func (s *slowForgetStore) Forget(ctx context.Context, source string) error {
	time.Sleep(300 * time.Millisecond)
	err := s.Store.Forget(ctx, source)
	s.forgot.Store(true)
	return err
}

// TestRemovedThenStopped: a Source removed just before the aggregator
// stops is forgotten (its schedule and lease) before Run returns, while
// the store is still open (the command closes it right after).
func TestRemovedThenStopped(t *testing.T) {
	var fs *slowForgetStore
	a, _ := testAggregator(t, func(o *Options) {
		fs = &slowForgetStore{Store: o.Store}
		o.Store = fs
	})
	defer fs.Close()
	a.SetSources([]Source{{ID: "one", URL: staticSource(t, ""), Dest: "one"}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	waitUntil(t, "a run", func() bool { return row(a, "one").Runs == 1 })
	a.SetSources(nil)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !fs.forgot.Load() {
		t.Errorf("Run returned before the removed Source was forgotten")
	}
	scheds, err := fs.Schedules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scheds {
		if s.Source == "one" {
			t.Errorf("the removed Source's schedule is still in the store: %+v", s)
		}
	}
}

// TestEventsMayCallBack: Options.Events may call the Aggregator back (a
// report written on every Source added or removed): a reload does not
// deadlock.
func TestEventsMayCallBack(t *testing.T) {
	var seen atomic.Int64
	var a *Aggregator
	a, _ = testAggregator(t, func(o *Options) {
		o.Events = func(e Event) {
			if e.Kind == EventSourceAdded || e.Kind == EventSourceRemoved {
				a.Snapshot()
				seen.Add(1)
			}
		}
	})
	base := staticSource(t, "")
	a.SetSources([]Source{{ID: "one", URL: base, Dest: "one"}})
	runAggregator(t, a)
	waitUntil(t, "Run started", func() bool { return row(a, "one").Runs >= 1 })
	done := make(chan struct{})
	go func() {
		a.SetSources([]Source{{ID: "two", URL: base, Dest: "two"}})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("SetSources deadlocked with an Events callback that calls Snapshot")
	}
	if n := seen.Load(); n != 2 {
		t.Errorf("%d added/removed events, want 2", n)
	}
}

// TestFollowSourceDown: a --follow Source that is down at the start: the
// failed open is one failed run (unreachable), the Source is in backoff
// (5 s first), not opened again and again.
func TestFollowSourceDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/"
	ln.Close()
	a, starts := testAggregator(t, nil)
	a.SetSources([]Source{{ID: "down", URL: down, Dest: "down", Follow: true}})
	runAggregator(t, a)
	waitUntil(t, "the failed open", func() bool { return row(a, "down").Runs == 1 })
	time.Sleep(500 * time.Millisecond)
	r := row(a, "down")
	if n := starts("down"); n != 1 || r.State != StateBackoff || r.Reason != ReasonUnreachable || r.Failures != 1 {
		t.Errorf("%d runs; state %s, reason %s, %d failures; want 1 run, backoff, unreachable, 1", n, r.State, r.Reason, r.Failures)
	}
	if wait := r.Next.Sub(r.LastEnd); wait < 4*time.Second || wait > 6*time.Second {
		t.Errorf("next try %s after the failure, want the first backoff (5 s)", wait)
	}
}

// downStore is a store whose run history cannot be written (a database
// restarting); StartRun calls are counted.
type downStore struct {
	aggstore.Store
	starts atomic.Int64
}

func (s *downStore) StartRun(context.Context, aggstore.Run) (int64, error) {
	s.starts.Add(1)
	return 0, errors.New("store down")
}

// TestFollowStoreDown: a --follow Source that cannot be opened while the
// store cannot record the failure: the Source backs off like a failed run
// (a follower only starts at once when it has not failed), it is not
// opened again and again.
func TestFollowStoreDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	var ds *downStore
	a, _ := testAggregator(t, func(o *Options) {
		ds = &downStore{Store: o.Store}
		o.Store = ds
	})
	a.SetSources([]Source{{ID: "gone", URL: srv.URL + "/", Dest: "gone", Follow: true}})
	runAggregator(t, a)
	waitUntil(t, "a try", func() bool { return ds.starts.Load() >= 1 })
	time.Sleep(time.Second)
	if n := ds.starts.Load(); n > 2 {
		t.Errorf("%d tries within a second, want 1 then the backoff (5 s)", n)
	}
	if r := row(a, "gone"); r.Reason != ReasonState || r.State != StateBackoff {
		t.Errorf("reason %q, state %s; want %s, %s", r.Reason, r.State, ReasonState, StateBackoff)
	}
}
