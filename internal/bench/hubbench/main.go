// Command hubbench measures the hub's fan-out on loopback:
//
//	go run ./internal/bench/hubbench -subs 1000 -notes 20 -per-host 64
//
// It subscribes -subs callbacks (through the hub endpoint, with real
// verification GETs) on one loopback subscriber server, then
//   - publishes one notification and reports when the first and the last
//     subscriber received it (target: last within 1 s for 1,000);
//   - publishes -notes notifications back to back and reports the
//     sustained delivery rate (target: at least 2,000 deliveries/s).
//
// Publishes are fsync'd unless -nosync. All callbacks share the host
// 127.0.0.1, so -per-host (MaxConcurrentPerHost) bounds the concurrency.
// Nothing is dialled outside 127.0.0.0/8.
package main

import (
	"context"
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
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub"
)

func main() {
	subs := flag.Int("subs", 1000, "subscriptions")
	notes := flag.Int("notes", 20, "notifications for the sustained rate")
	perHost := flag.Int("per-host", 64, "MaxConcurrentPerHost")
	noSync := flag.Bool("nosync", false, "skip fsync on publish")
	size := flag.Int("size", 2048, "notification size in bytes")
	flag.Parse()

	dir, err := os.MkdirTemp("", "hubbench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	var delivered atomic.Int64
	var mu sync.Mutex
	var firstAt, lastAt time.Time
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, r.URL.Query().Get("hub.challenge"))
			return
		}
		io.Copy(io.Discard, r.Body)
		now := time.Now()
		mu.Lock()
		if firstAt.IsZero() {
			firstAt = now
		}
		lastAt = now
		mu.Unlock()
		delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer sub.Close()

	srv := httptest.NewUnstartedServer(nil)
	h, err := hub.Open(hub.Config{
		StateDir: dir, URL: "http://" + srv.Listener.Addr().String() + "/",
		AllowPrivateCallbacks: true, MaxConcurrentPerHost: *perHost, NoSync: *noSync,
		MaxSubscriptionsPerTopic: *subs, MaxPendingPerHost: *subs,
		LookupIP: func(context.Context, string) ([]net.IP, error) { return nil, fmt.Errorf("no DNS") },
		DialControl: func(_, a string, _ syscall.RawConn) error {
			if ap, err := netip.ParseAddrPort(a); err != nil || !ap.Addr().IsLoopback() {
				return fmt.Errorf("refused %s", a)
			}
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	srv.Config.Handler = h
	srv.Start()
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { h.Run(ctx); close(runDone) }()

	topic := "http://127.0.0.1:1/changes/notification.xml"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	t0 := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range *subs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			resp, err := client.PostForm(srv.URL, url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic},
				"hub.callback": {sub.URL + "/cb/" + strconv.Itoa(i)}})
			if err != nil || resp.StatusCode != http.StatusAccepted {
				log.Fatalf("subscribe: %v %v", resp, err)
			}
			resp.Body.Close()
		}()
	}
	wg.Wait()
	for h.Stats().Subscriptions < *subs {
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Printf("subscribed and verified %d callbacks in %v\n", *subs, time.Since(t0).Round(time.Millisecond))

	body := []byte("<?xml version=\"1.0\"?><urlset>" + strings.Repeat("x", max(0, *size-40)) + "</urlset>")
	wait := func(n int64) {
		for delivered.Load() < n {
			time.Sleep(200 * time.Microsecond)
		}
	}
	// One notification to every subscriber.
	start := time.Now()
	if _, err := h.Publish(ctx, topic, "application/xml", body, nil); err != nil {
		log.Fatal(err)
	}
	acked := time.Since(start)
	wait(int64(*subs))
	mu.Lock()
	first, last := firstAt.Sub(start), lastAt.Sub(start)
	mu.Unlock()
	fmt.Printf("fan-out of 1 notification (%d bytes) to %d subscribers: publish acknowledged after %v, first delivery %v, last delivery %v\n",
		len(body), *subs, acked.Round(time.Microsecond), first.Round(time.Microsecond), last.Round(time.Millisecond))

	// Sustained.
	base := delivered.Load()
	start = time.Now()
	for range *notes {
		if _, err := h.Publish(ctx, topic, "application/xml", body, nil); err != nil {
			log.Fatal(err)
		}
	}
	want := base + int64(*notes**subs)
	wait(want)
	el := time.Since(start)
	fmt.Printf("sustained: %d notifications x %d subscribers = %d deliveries in %v: %.0f deliveries/s\n",
		*notes, *subs, *notes**subs, el.Round(time.Millisecond), float64(*notes**subs)/el.Seconds())
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("per-host limit %d, fsync %v, GOMAXPROCS %d, heap in use %d MiB\n", *perHost, !*noSync, runtime.GOMAXPROCS(0), ms.HeapInuse>>20)
	cancel()
	<-runDone
	h.Close()
}
