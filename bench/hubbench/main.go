// Command hubbench measures the hub's fan-out on loopback, on the embedded
// store and on PostgreSQL with one and two nodes, in the same run, and
// prints a markdown table:
//
//	go run ./bench/hubbench -subs 1000 -notes 20 -per-host 64
//
// For each store it subscribes -subs callbacks (through the hub endpoint,
// with real verification GETs; with two nodes, alternately on either) on
// one loopback subscriber server, then
//   - publishes one notification and reports when the first and the last
//     subscriber received it (target: last within 1 s for 1,000);
//   - publishes -notes notifications back to back (with two nodes,
//     alternately to either) and reports the sustained delivery rate
//     (target: at least 2,000 deliveries/s).
//
// The same run measures a baseline: a plain Go client POSTing the same body
// once to each of the -subs callback paths of the same subscriber server,
// with -per-host concurrency (one http.Transport, keep-alive): the rate
// loopback HTTP allows on this machine, against which the hub's rate is a
// ratio. -cpuprofile writes a CPU profile of the fan-out phase only (the
// single notification and the sustained run, not the subscriptions).
//
//	go run ./bench/hubbench -subs 10000 -notes 5 -stores bolt -per-host 64
//
// -preload (bolt only) writes the subscriptions straight into the store
// before the hub opens it, instead of subscribing through the hub (no
// verification GETs: at 10,000 subscriptions verification takes minutes
// on a loaded 2-core machine), to repeat and profile the fan-out quickly.
// -subprofile writes a CPU profile of the subscribe and verify phase.
// -tls serves the subscriber over TLS offering h2 (httptest's test
// certificate, trusted through hub.Config.RootCAs): the hub's deliveries
// and the baseline's POSTs then share HTTP/2 connections.
//
// Publishes are fsync'd unless -nosync (bolt). PostgreSQL is a throwaway
// server started here (internal/testing/pgtest: Debian's postgresql package,
// loopback, fsync off as for every test server): compare the ratios, not
// the absolute rates, with a production server. All callbacks share the
// host 127.0.0.1, so -per-host (MaxConcurrentPerHost, per node) bounds the
// concurrency. Nothing is dialled outside 127.0.0.0/8.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/websub/hub"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/boltstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/pgstore"
)

type options struct {
	tls                        bool           // the subscriber server over TLS, offering h2
	roots                      *x509.CertPool // trusting its certificate
	subs, notes, perHost, size int
	noSync, preload            bool
	cpuprofile, subprofile     string
}

type result struct {
	store                string
	nodes                int
	verify               time.Duration
	acked, first, last   time.Duration
	sustained            time.Duration
	deliveries, repeated int64
	note                 string
	// baseline: a plain client's POSTs to the same subscriber server,
	// same count and concurrency, measured right after the hub's run.
	baseLast time.Duration
	// CPU time of the whole process (hub and subscriber server) for the
	// one-notification fan-out and for the baseline's POSTs.
	cpuOne, cpuBase time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.subs, "subs", 1000, "subscriptions")
	flag.IntVar(&o.notes, "notes", 20, "notifications for the sustained rate")
	flag.IntVar(&o.perHost, "per-host", 64, "MaxConcurrentPerHost (per node)")
	flag.BoolVar(&o.noSync, "nosync", false, "skip fsync on publish (bolt)")
	flag.IntVar(&o.size, "size", 2048, "notification size in bytes")
	flag.BoolVar(&o.preload, "preload", false, "bolt: write the subscriptions into the store directly (no verification) before measuring")
	flag.StringVar(&o.subprofile, "subprofile", "", "write a CPU profile of the subscribe and verify phase (the last store's) to this file")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the fan-out phases (the last store's) to this file")
	flag.BoolVar(&o.tls, "tls", false, "the subscriber server over TLS offering h2 (a test certificate), for the hub and the baseline")
	stores := flag.String("stores", "bolt,pg1,pg2", "what to measure: bolt (1 node), pg1 and pg2 (PostgreSQL, 1 and 2 nodes)")
	flag.Parse()
	if o.tls {
		// Every httptest TLS server presents the same test certificate.
		s := httptest.NewTLSServer(http.NotFoundHandler())
		o.roots = x509.NewCertPool()
		o.roots.AddCert(s.Certificate())
		s.Close()
	}

	ctx := context.Background()
	var pg *pgtest.Server
	var results []result
	for i, which := range strings.Split(*stores, ",") {
		var r result
		var err error
		switch which {
		case "bolt":
			r, err = runBolt(ctx, o)
		case "pg1", "pg2":
			if pg == nil {
				if why := pgtest.Available(); why != "" {
					log.Fatal(why)
				}
				if pg, err = pgtest.Start(); err != nil {
					log.Fatal(err)
				}
				defer pg.Stop()
			}
			r, err = runPG(ctx, o, pg, fmt.Sprintf("hubbench_%d_%d", os.Getpid(), i), int(which[2]-'0'))
		default:
			log.Fatalf("-stores: unknown %q", which)
		}
		if err != nil {
			log.Fatalf("%s: %v", which, err)
		}
		results = append(results, r)
		fmt.Fprintf(os.Stderr, "%s, %d node(s): last delivery %v (%.0f/s), sustained %.0f deliveries/s; baseline %v (%.0f POSTs/s)\n",
			r.store, r.nodes, r.last.Round(time.Millisecond), float64(o.subs)/r.last.Seconds(),
			float64(r.deliveries)/r.sustained.Seconds(), r.baseLast.Round(time.Millisecond), float64(o.subs)/r.baseLast.Seconds())
	}
	fmt.Print(markdown(o, results))
}

func markdown(o options, rs []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Hub fan-out on loopback: %d subscribers (one subscriber server), %d-byte notifications, %d per host per node, GOMAXPROCS %d.\n\n",
		o.subs, o.size, o.perHost, runtime.GOMAXPROCS(0))
	b.WriteString("| store | nodes | subscribe + verify | 1 notification: acked / first / last delivery | 1 notification deliveries/s | sustained deliveries/s | baseline: plain client, same POSTs | hub / baseline | CPU µs per delivery: hub / baseline | note |\n")
	b.WriteString("|---|---:|---:|---|---:|---:|---|---:|---|---|\n")
	for _, r := range rs {
		base := float64(o.subs) / r.baseLast.Seconds()
		one := float64(o.subs) / r.last.Seconds()
		perHub := float64(r.cpuOne.Microseconds()) / float64(o.subs)
		perBase := float64(r.cpuBase.Microseconds()) / float64(o.subs)
		fmt.Fprintf(&b, "| %s | %d | %v | %v / %v / %v | %s | %s | %v (%s/s) | %.2f | %.0f / %.0f | %s |\n", r.store, r.nodes, r.verify.Round(time.Millisecond),
			r.acked.Round(10*time.Microsecond), r.first.Round(10*time.Microsecond), r.last.Round(time.Millisecond),
			commas(one), commas(float64(r.deliveries)/r.sustained.Seconds()),
			r.baseLast.Round(time.Millisecond), commas(base), one/base, perHub, perBase, r.note)
	}
	b.WriteString("\nThe CPU columns count the whole process (the hub and the subscriber server, which the baseline's POSTs also reach): steadier than the wall clock on a shared machine.\n")
	if o.subs >= 10000 {
		b.WriteString("\nTarget (issue 23): one notification to 10,000 subscribers, last delivery <= 1 s and >= 50,000 deliveries/s.\n")
	}
	return b.String()
}

func commas(f float64) string {
	s := strconv.FormatInt(int64(f+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// sink is the subscriber server: it answers verification and counts
// deliveries.
type sink struct {
	srv       *httptest.Server
	delivered atomic.Int64
	mu        sync.Mutex
	firstAt   time.Time
	lastAt    time.Time
}

func newSink(o options) *sink {
	s := &sink{}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, r.URL.Query().Get("hub.challenge"))
			return
		}
		io.Copy(io.Discard, r.Body)
		now := time.Now()
		s.mu.Lock()
		if s.firstAt.IsZero() {
			s.firstAt = now
		}
		s.lastAt = now
		s.mu.Unlock()
		s.delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	if o.tls {
		s.srv.EnableHTTP2 = true
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	return s
}

func (s *sink) reset() {
	s.mu.Lock()
	s.firstAt, s.lastAt = time.Time{}, time.Time{}
	s.mu.Unlock()
}

func (s *sink) wait(n int64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for s.delivered.Load() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d deliveries after %v", s.delivered.Load(), n, limit)
		}
		time.Sleep(2 * time.Millisecond) // lastAt is stamped by the handler: polling need not be fine
	}
	return nil
}

// node is one running hub.
type node struct {
	h    *hub.Hub
	srv  *httptest.Server
	stop func()
}

func startNode(o options, cfg hub.Config) (*node, error) {
	srv := httptest.NewUnstartedServer(nil)
	cfg.URL = "http://hub.invalid/" // the nodes' common public URL
	cfg.AllowPrivateCallbacks = true
	cfg.RootCAs = o.roots
	cfg.MaxConcurrentPerHost = o.perHost
	cfg.MaxSubscriptionsPerTopic = o.subs
	cfg.MaxPendingPerHost = o.subs
	cfg.MaxPendingVerifications = o.subs
	cfg.LookupIP = func(context.Context, string) ([]net.IP, error) { return nil, fmt.Errorf("no DNS") }
	cfg.DialControl = func(_, a string, _ syscall.RawConn) error {
		if ap, err := netip.ParseAddrPort(a); err != nil || !ap.Addr().IsLoopback() {
			return fmt.Errorf("refused %s", a)
		}
		return nil
	}
	h, err := hub.Open(cfg)
	if err != nil {
		return nil, err
	}
	srv.Config.Handler = h
	srv.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	return &node{h: h, srv: srv, stop: func() { srv.Close(); cancel(); <-done; h.Close() }}, nil
}

const topic = "http://127.0.0.1:1/changes/notification.xml"

func runBolt(ctx context.Context, o options) (result, error) {
	dir, err := os.MkdirTemp("", "hubbench")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	cfg := hub.Config{StateDir: dir, NoSync: o.noSync}
	var sk *sink
	if o.preload {
		// Written before the hub opens the state, without fsync (one
		// transaction each); the hub then opens it with the options
		// measured.
		sk = newSink(o)
		defer sk.srv.Close()
		bs, err := boltstore.Open(filepath.Join(dir, "hub.db"), &boltstore.Options{NoSync: true})
		if err != nil {
			return result{}, err
		}
		expires := time.Now().Add(time.Hour)
		for i := range o.subs {
			// The hub's key for an ASCII topic and callback without
			// percent-escapes: topic NUL callback.
			cb := sk.srv.URL + "/cb/" + strconv.Itoa(i)
			if err := bs.PutSubscription(ctx, hubstore.Subscription{Key: topic + "\x00" + cb, Topic: topic, Callback: cb, Lease: 3600, Expires: expires}); err != nil {
				bs.Close()
				return result{}, err
			}
		}
		if err := bs.Close(); err != nil {
			return result{}, err
		}
	}
	n, err := startNode(o, cfg)
	if err != nil {
		return result{}, err
	}
	defer n.stop()
	note := "bbolt, fsync on publish"
	if o.noSync {
		note = "bbolt, no fsync"
	}
	if o.preload {
		note += ", subscriptions preloaded"
	}
	held := func() (int, error) { return n.h.Stats().Held, nil }
	return measure(ctx, o, "bolt", []*node{n}, held, nil, note, sk)
}

func runPG(ctx context.Context, o options, pg *pgtest.Server, db string, nodes int) (result, error) {
	conn, err := pgx.Connect(ctx, pg.URL)
	if err != nil {
		return result{}, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		return result{}, err
	}
	u := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", pg.Port, db)
	var ns []*node
	for i := range nodes {
		st, err := pgstore.Open(ctx, u, nil)
		if err != nil {
			return result{}, err
		}
		defer st.Close()
		n, err := startNode(o, hub.Config{Store: st, Node: fmt.Sprintf("node-%d", i)})
		if err != nil {
			return result{}, err
		}
		defer n.stop()
		ns = append(ns, n)
	}
	dbc, err := pgx.Connect(ctx, u)
	if err != nil {
		return result{}, err
	}
	defer dbc.Close(ctx)
	// Ready when every subscription is verified and, with several nodes,
	// each holds a share.
	ready := func() (int, error) {
		var total, holders int
		err := dbc.QueryRow(ctx, `SELECT count(*), count(DISTINCT holder) FROM hub_subs WHERE lease_until > now()`).Scan(&total, &holders)
		if holders < nodes {
			return 0, err
		}
		return total, err
	}
	spread := func() string {
		rows, _ := dbc.Query(ctx, `SELECT holder, count(*) FROM hub_subs GROUP BY holder ORDER BY holder`)
		var parts []string
		var h string
		var c int
		pgx.ForEachRow(rows, []any{&h, &c}, func() error { parts = append(parts, fmt.Sprintf("%s %d", h, c)); return nil })
		return strings.Join(parts, ", ")
	}
	return measure(ctx, o, "PostgreSQL", ns, ready, spread, "pgtest server (fsync off)", nil)
}

// measure subscribes o.subs callbacks through the nodes (unless they were
// preloaded for sink pre), waits for subscribed() to reach o.subs, then
// times one fan-out and the sustained rate.
func measure(ctx context.Context, o options, store string, ns []*node, subscribed func() (int, error), spread func() string, note string,
	pre *sink) (result, error) {
	r := result{store: store, nodes: len(ns), note: note}
	sk := pre
	if sk == nil {
		sk = newSink(o)
		defer sk.srv.Close()
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, TLSClientConfig: &tls.Config{RootCAs: o.roots}}}
	if o.subprofile != "" {
		f, err := os.Create(o.subprofile)
		if err != nil {
			return r, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return r, err
		}
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	errc := make(chan error, 1)
	for i := range o.subs {
		if pre != nil {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			resp, err := client.PostForm(ns[i%len(ns)].srv.URL, url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic},
				"hub.callback": {sk.srv.URL + "/cb/" + strconv.Itoa(i)}})
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					err = fmt.Errorf("subscribe: %s", resp.Status)
				}
			}
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return r, err
	default:
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		n, err := subscribed()
		if err != nil {
			return r, err
		}
		if n >= o.subs {
			break
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("%d of %d subscriptions verified and claimed", n, o.subs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.verify = time.Since(t0)
	if o.subprofile != "" {
		pprof.StopCPUProfile()
	}
	if spread != nil {
		r.note += "; claims: " + spread()
	}

	body := []byte("<?xml version=\"1.0\"?><urlset>" + strings.Repeat("x", max(0, o.size-40)) + "</urlset>")
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return r, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return r, err
		}
		defer pprof.StopCPUProfile()
	}
	// One notification to every subscriber.
	sk.reset()
	cpu0 := cpuTime()
	start := time.Now()
	if _, err := ns[0].h.Publish(ctx, topic, "application/xml", body, nil); err != nil {
		return r, err
	}
	r.acked = time.Since(start)
	if err := sk.wait(int64(o.subs), time.Minute); err != nil {
		return r, err
	}
	r.cpuOne = cpuTime() - cpu0
	sk.mu.Lock()
	r.first, r.last = sk.firstAt.Sub(start), sk.lastAt.Sub(start)
	sk.mu.Unlock()

	// Sustained: back to back, alternately to each node.
	base := sk.delivered.Load()
	start = time.Now()
	for i := range o.notes {
		if _, err := ns[i%len(ns)].h.Publish(ctx, topic, "application/xml", body, nil); err != nil {
			return r, err
		}
	}
	want := base + int64(o.notes*o.subs)
	if err := sk.wait(want, 5*time.Minute); err != nil {
		return r, err
	}
	r.sustained = time.Since(start)
	r.deliveries = int64(o.notes * o.subs)
	time.Sleep(100 * time.Millisecond)
	r.repeated = sk.delivered.Load() - want
	if r.repeated > 0 {
		r.note += fmt.Sprintf("; %d repeated deliveries", r.repeated)
	}
	if o.cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	var err error
	r.baseLast, r.cpuBase, err = baseline(ctx, o, sk, body)
	return r, err
}

// baseline POSTs body once to each of o.subs callback paths of sk, with
// o.perHost workers sharing one keep-alive transport (as the hub's
// deliveries to one host), and returns when the last was answered.
func baseline(ctx context.Context, o options, sk *sink, body []byte) (time.Duration, time.Duration, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: o.perHost, MaxConnsPerHost: o.perHost}
	if o.tls {
		tr.TLSClientConfig, tr.ForceAttemptHTTP2 = &tls.Config{RootCAs: o.roots}, true
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	// Warm the connections as the hub's are after verification.
	post := func(i int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, sk.srv.URL+"/cb/"+strconv.Itoa(i), strings.NewReader(string(body)))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/xml")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("baseline POST: %s", resp.Status)
		}
		return nil
	}
	var next atomic.Int64
	run := func(n int) error {
		next.Store(0)
		var wg sync.WaitGroup
		errc := make(chan error, o.perHost)
		for range o.perHost {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= n {
						return
					}
					if err := post(i); err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		select {
		case err := <-errc:
			return err
		default:
			return nil
		}
	}
	if err := run(o.perHost * 4); err != nil {
		return 0, 0, err
	}
	cpu0 := cpuTime()
	start := time.Now()
	if err := run(o.subs); err != nil {
		return 0, 0, err
	}
	return time.Since(start), cpuTime() - cpu0, nil
}
