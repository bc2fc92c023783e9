// Command pushbench measures how long a change takes to reach a
// subscriber over the live push (WebSocket, package wspush) and over
// WebSub, in the same run, from the same changes: file written in the
// Source's directory → watch, scan, journal → a WebSub notification
// through the embedded hub to a callback, and an activity over the
// WebSocket (sent once the documents listing the change are published).
// It reports p50/p90/p99/max of each and their ratio, against the issue's
// bar (push p99 ≤ 50 ms at 100 changes/s, and no worse than WebSub).
//
// With -burst N it measures instead the CPU the watch loop spends on N
// new files written at once (the cost of coalescing; see Burst).
//
//	go run ./bench/pushbench [-changes 1000] [-rate 100] [-files 1000] [-debounce 20ms]
//	go run ./bench/pushbench -burst 10000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/notify"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/websub/subscriber"
	"github.com/resourcesync-go/resourcesync/wspush"
)

// Latency summarises one channel's delays, in milliseconds.
type Latency struct {
	Arrived int     `json:"arrived"`
	P50ms   float64 `json:"p50_ms"`
	P90ms   float64 `json:"p90_ms"`
	P99ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
}

// Result is what one run measured.
type Result struct {
	Changes    int     `json:"changes"`
	RatePerS   float64 `json:"rate_per_s"`
	Files      int     `json:"files"`
	DebounceMs float64 `json:"debounce_ms"`
	Push       Latency `json:"websocket"`
	WebSub     Latency `json:"websub"`
	// The same from the moment the change is journaled (after the watch,
	// the debounce and the scan, which both share): the transport alone.
	PushFromJournal   Latency `json:"websocket_from_journal"`
	WebSubFromJournal Latency `json:"websub_from_journal"`
	// Updates is how many updates journaled the changes (fewer: more
	// coalescing).
	Updates int `json:"updates"`
	// P99Ratio is the push's p99 over WebSub's (≤ 1: at least as good).
	P99Ratio float64 `json:"p99_ratio"`
}

func main() {
	changes := flag.Int("changes", 1000, "changes to measure")
	rate := flag.Float64("rate", 100, "changes per second")
	files := flag.Int("files", 1000, "files in the collection")
	asJSON := flag.Bool("json", false, "print the result as JSON")
	debounce := flag.Duration("debounce", 20*time.Millisecond, "the watch's debounce (serve's --debounce default)")
	burst := flag.Int("burst", 0, "measure the CPU cost of this many files written at once instead")
	burstWriter := flag.String("burst-writer", "", "(internal) write the burst's files into `DIR`")
	burstFrom := flag.Int("burst-from", 0, "(internal) the burst's first file")
	flag.Parse()
	if *burstWriter != "" {
		if err := writeFiles(*burstWriter, *burstFrom, *burstFrom+*burst); err != nil {
			fmt.Fprintln(os.Stderr, "pushbench:", err)
			os.Exit(1)
		}
		return
	}
	if *burst > 0 {
		res, err := Burst(context.Background(), *burst, *files, *debounce, true)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pushbench:", err)
			os.Exit(1)
		}
		if *asJSON {
			json.NewEncoder(os.Stdout).Encode(res)
			return
		}
		fmt.Printf("burst of %d new files (written by a child process): watch loop, scans and publishing %.0f ms CPU, journaled after %.0f ms in %d updates\n",
			res.Files, res.CPUms, res.WallMs, res.Updates)
		return
	}
	res, err := Bench(context.Background(), *changes, *rate, *files, *debounce, http.DefaultClient)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pushbench:", err)
		os.Exit(1)
	}
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(res)
		return
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	fmt.Printf("change to subscriber over %d changes at %.0f/s (%d files, debounce %v):\n", res.Changes, res.RatePerS, res.Files, *debounce)
	fmt.Printf("  WebSocket: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms [bar 50: %s], max %.1f ms; %d arrived\n",
		res.Push.P50ms, res.Push.P90ms, res.Push.P99ms, verdict(res.Push.P99ms <= 50), res.Push.MaxMs, res.Push.Arrived)
	fmt.Printf("  WebSub:    p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms; %d arrived\n",
		res.WebSub.P50ms, res.WebSub.P90ms, res.WebSub.P99ms, res.WebSub.MaxMs, res.WebSub.Arrived)
	fmt.Printf("  p99 WebSocket/WebSub: %.2f [bar ≤ 1: %s]\n", res.P99Ratio, verdict(res.P99Ratio <= 1))
	fmt.Printf("  from the journal: WebSocket p50 %.1f ms, p99 %.1f ms; WebSub p50 %.1f ms, p99 %.1f ms; %d updates\n",
		res.PushFromJournal.P50ms, res.PushFromJournal.P99ms, res.WebSubFromJournal.P50ms, res.WebSubFromJournal.P99ms, res.Updates)
}

// clock records, per URL, when it was written and when each channel
// first delivered it.
type clock struct {
	mu       sync.Mutex
	written  map[string]time.Time
	journal  map[string]time.Time
	got      [2]map[string]time.Duration
	fromJrnl [2]map[string]time.Duration
	all      [2]chan struct{}
	want     int
	updates  int
}

func (c *clock) arrived(ch int, url string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.written[url]
	if _, seen := c.got[ch][url]; !ok || seen {
		return
	}
	c.got[ch][url] = at.Sub(w)
	if j, ok := c.journal[url]; ok {
		c.fromJrnl[ch][url] = at.Sub(j)
	}
	if len(c.got[ch]) == c.want {
		close(c.all[ch])
	}
}

// Bench runs one measurement; client subscribes (tests give a
// loopback-only one).
func Bench(ctx context.Context, changes int, rate float64, files int, debounce time.Duration, client *http.Client) (*Result, error) {
	if changes > files {
		return nil, fmt.Errorf("changes (%d) must not exceed files (%d): each change is a file's first", changes, files)
	}
	root, err := os.MkdirTemp("", "pushbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	dir := filepath.Join(root, "collection")
	rel := func(i int) string { return fmt.Sprintf("%02d/f%05d.txt", i%20, i) }
	for i := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel(i)))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(fmt.Sprint("v0 ", i)), 0o644); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

	// The Source, with its embedded hub and the push.
	sln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	base := "http://" + sln.Addr().String() + "/"
	cfg := source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "default", Dir: dir}}, StateDir: filepath.Join(root, "state"),
		ChangeListPeriod: time.Hour, Logger: quiet}
	svc, err := notify.Setup(&cfg, notify.ServiceConfig{AllowPrivateCallbacks: true})
	if err != nil {
		return nil, err
	}
	defer svc.Close()
	push, err := notify.SetupPush(&cfg, wspush.Config{Logger: quiet})
	if err != nil {
		return nil, err
	}
	defer push.Close()
	c := &clock{written: map[string]time.Time{}, journal: map[string]time.Time{}, want: changes}
	for i := range 2 {
		c.got[i] = map[string]time.Duration{}
		c.fromJrnl[i] = map[string]time.Duration{}
		c.all[i] = make(chan struct{})
	}
	// Outermost: when each record is durable, before either channel.
	inner := cfg.OnUpdate
	cfg.OnUpdate = func(ctx context.Context, set string, st store.Store, from, to uint64) {
		now := time.Now()
		c.mu.Lock()
		c.updates++
		c.mu.Unlock()
		for ch, err := range st.Journal(ctx, from+1) {
			if err != nil || ch.Seq > to {
				break
			}
			c.mu.Lock()
			c.journal[base+ch.Path()] = now
			c.mu.Unlock()
		}
		inner(ctx, set, st, from, to)
	}
	src, err := source.Open(cfg)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if err := svc.Bind(ctx, src); err != nil {
		return nil, err
	}
	push.Bind(src)
	if _, err := src.Update(ctx); err != nil {
		return nil, err
	}
	h := svc.Handlers()
	for k, v := range push.Handlers() {
		h[k] = v
	}
	ssrv := &http.Server{Handler: src.Handler(h)}
	go ssrv.Serve(sln)
	defer ssrv.Close()
	svc.Run(ctx, src)
	ran := make(chan struct{})
	go func() { src.Run(ctx, source.RunOptions{Watch: true, Debounce: debounce}); close(ran) }()
	defer func() { cancel(); <-ran }() // before the Source closes

	// The WebSub subscriber.
	fln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	up := make(chan struct{})
	var once sync.Once
	sub, err := subscriber.New(subscriber.Config{Hub: svc.HubURL(), Topic: notify.TopicURL(base, "default"),
		CallbackURL: "http://" + fln.Addr().String() + "/cb", Secret: []byte(subscriber.NewSecret()), Client: client, Logger: quiet,
		OnNotification: func(_ context.Context, n subscriber.Notification) error {
			for _, e := range n.Entries {
				c.arrived(1, e.Loc, n.Received)
			}
			return nil
		},
		OnHubState: func(ok bool, _ error) {
			if ok {
				once.Do(func() { close(up) })
			}
		}})
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	fsrv := &http.Server{Handler: sub.Handler()}
	go fsrv.Serve(fln)
	defer fsrv.Close()
	go sub.Run(ctx)

	// The WebSocket subscriber.
	d, err := wspush.Subscribe(ctx, client, push.SubscribeURL(), src.CapabilityListURL("default"))
	if err != nil {
		return nil, err
	}
	r, err := wspush.Dial(ctx, client, d.ReceiveFrom)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	go func() {
		for {
			a, err := r.Next(ctx)
			if err != nil {
				return
			}
			if a.Object != nil {
				c.arrived(0, a.Object.ID, time.Now())
			}
		}
	}()
	select {
	case <-up:
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("no WebSub subscription after 30 s")
	}
	time.Sleep(200 * time.Millisecond)

	// The changes, at a steady rate, each written aside and renamed into
	// place.
	start := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	tmp := filepath.Join(root, "incoming")
	for k := range changes {
		c.mu.Lock()
		c.written[base+rel(k)] = time.Now()
		c.mu.Unlock()
		if err := os.WriteFile(tmp, []byte(fmt.Sprintf("v1 %d", k)), 0o644); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, filepath.Join(dir, filepath.FromSlash(rel(k)))); err != nil {
			return nil, err
		}
		if next := start.Add(time.Duration(k+1) * interval); time.Until(next) > 0 {
			time.Sleep(time.Until(next))
		}
	}
	timeout := time.After(30 * time.Second)
	for i := range 2 {
		select {
		case <-c.all[i]:
		case <-timeout:
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	res := &Result{Changes: changes, RatePerS: rate, Files: files, DebounceMs: ms(debounce), Push: summary(c.got[0]), WebSub: summary(c.got[1]),
		PushFromJournal: summary(c.fromJrnl[0]), WebSubFromJournal: summary(c.fromJrnl[1]), Updates: c.updates}
	if res.WebSub.P99ms > 0 {
		res.P99Ratio = res.Push.P99ms / res.WebSub.P99ms
	}
	return res, nil
}

func summary(got map[string]time.Duration) Latency {
	var lat []time.Duration
	for _, d := range got {
		lat = append(lat, d)
	}
	sort.Slice(lat, func(i, k int) bool { return lat[i] < lat[k] })
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	return Latency{Arrived: len(lat), P50ms: pct(0.5), P90ms: pct(0.9), P99ms: pct(0.99), MaxMs: pct(1)}
}
