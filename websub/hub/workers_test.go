package hub

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/boltstore"
)

// Deliveries are made by per-host workers (at most MaxConcurrentPerHost a
// host), not by a goroutine per subscription: during and after a fan-out
// to 1,000 subscriptions the hub runs a few dozen goroutines, not a
// thousand (whose stacks the garbage collector would scan on every
// cycle), and every subscription still gets the notification once.
func TestDeliveryNoGoroutinePerSubscription(t *testing.T) {
	const n, perHost = 1000, 4
	sub := newSubscriber(t)
	topic := "http://127.0.0.1:1/changes/notification.xml"
	bs, err := boltstore.Open(filepath.Join(t.TempDir(), "hub.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	ctx := context.Background()
	expires := time.Now().Add(time.Hour).UTC()
	for i := range n {
		cb := sub.url("/cb/" + strconv.Itoa(i))
		if err := bs.PutSubscription(ctx, hubstore.Subscription{Key: subKey(topic, cb), Topic: topic, Callback: cb, Lease: 3600, Expires: expires}); err != nil {
			t.Fatal(err)
		}
	}
	before := runtime.NumGoroutine()
	th := newTestHub(t, func(c *Config) {
		c.Store = bs
		c.StateDir = ""
		c.MaxConcurrentPerHost = perHost
	})
	waitFor(t, 30*time.Second, "all subscriptions held", func() bool { return th.heldCount() == n })

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if g := int64(runtime.NumGoroutine()); g > peak.Load() {
				peak.Store(g)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	if _, err := th.Publish(ctx, topic, "application/xml", []byte("<x/>"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "every delivery", func() bool { return len(sub.deliveries()) >= n })
	close(stop)
	<-sampled
	seen := map[string]bool{}
	for _, d := range sub.deliveries() {
		if seen[d.URL] {
			t.Fatalf("%s got the notification twice", d.URL)
		}
		seen[d.URL] = true
	}
	// The hub's own goroutines (listener, watch, claimer, ...), the
	// workers and the subscriber server's connections: far below n.
	if extra := peak.Load() - int64(before); extra > 100 {
		t.Errorf("%d more goroutines during a fan-out to %d subscriptions (at most %d a host): a goroutine per subscription?", extra, n, perHost)
	}
}

// One slow callback host ties up only its own workers: the subscriptions
// of another host get every notification meanwhile, in order.
func TestSlowHostDoesNotStallOtherHosts(t *testing.T) {
	th := newTestHub(t, func(c *Config) { c.MaxConcurrentPerHost = 2 })
	th.dns.set("slow.test", fixed("127.0.0.1"))
	release := make(chan struct{})
	srv := newSubscriber(t)
	srv.status = func(_ int, d delivery) int {
		if strings.HasPrefix(d.URL, "/slow") {
			<-release
		}
		return 200
	}
	t.Cleanup(func() { close(release) })
	slowBase := strings.Replace(srv.url(""), "127.0.0.1", "slow.test", 1)
	for i := range 6 {
		th.subscribe(t, topicA, slowBase+fmt.Sprintf("/slow%d", i), nil)
		th.subscribe(t, topicA, srv.url(fmt.Sprintf("/f%d", i)), nil)
	}
	for i := range 3 {
		th.mustPublish(t, topicA, fmt.Sprintf("<n%d/>", i))
	}
	fast := func() map[string][]string {
		m := map[string][]string{}
		for _, d := range srv.deliveries() {
			if strings.HasPrefix(d.URL, "/f") {
				m[d.URL] = append(m[d.URL], d.Body)
			}
		}
		return m
	}
	waitFor(t, 10*time.Second, "the other host's deliveries", func() bool {
		n := 0
		for _, bs := range fast() {
			n += len(bs)
		}
		return n == 18
	})
	for u, bs := range fast() {
		if strings.Join(bs, "") != "<n0/><n1/><n2/>" {
			t.Errorf("%s got %v, want n0, n1, n2 in order", u, bs)
		}
	}
}

// The first delivery to a host goes alone (so that a burst does not dial
// many connections before one exists), but the others wait only until it
// has its connection: a first delivery the subscriber never answers does
// not hold up the host's other subscriptions.
func TestSlowFirstDeliveryDoesNotHoldHost(t *testing.T) {
	th := newTestHub(t, func(c *Config) {
		c.MaxConcurrentPerHost = 3
		c.RequestTimeout = time.Minute // the slow answer does not time out meanwhile
	})
	release := make(chan struct{})
	srv := newSubscriber(t)
	srv.status = func(_ int, d delivery) int {
		if strings.HasPrefix(d.URL, "/slow") {
			<-release
		}
		return 200
	}
	t.Cleanup(func() { close(release) })
	th.subscribe(t, topicA, srv.url("/slow"), nil)
	th.mustPublish(t, topicA, "<n0/>") // the host's first delivery: never answered
	for i := range 4 {
		th.subscribe(t, topicA, srv.url(fmt.Sprintf("/f%d", i)), nil)
	}
	th.mustPublish(t, topicA, "<n1/>")
	waitFor(t, 3*time.Second, "the other subscriptions' deliveries", func() bool {
		n := 0
		for _, d := range srv.deliveries() {
			if strings.HasPrefix(d.URL, "/f") {
				n++
			}
		}
		return n == 4
	})
}

// TestRetryQueuedBesideABlockedWorker: a subscription whose retry comes
// due while the host's only worker waits on a slow subscriber gets a
// worker of its own. It was left queued behind the blocked one (its
// host's queue started no worker while one was running), so its retries
// and every later notification waited for the slow answer.
func TestRetryQueuedBesideABlockedWorker(t *testing.T) {
	th := newTestHub(t, func(c *Config) {
		c.MaxConcurrentPerHost = 4
		c.RequestTimeout = time.Minute
		c.RetrySchedule = []time.Duration{50 * time.Millisecond}
	})
	release := make(chan struct{})
	var fails atomic.Int32
	srv := newSubscriber(t)
	srv.status = func(_ int, d delivery) int {
		switch {
		case strings.HasPrefix(d.URL, "/slow"):
			<-release
		case strings.HasPrefix(d.URL, "/flaky") && fails.Add(1) <= 2:
			return 500
		}
		return 200
	}
	t.Cleanup(func() { close(release) })
	th.subscribe(t, topicA, srv.url("/slow"), nil)
	th.subscribe(t, topicA, srv.url("/flaky"), nil)
	for i := range 3 {
		th.mustPublish(t, topicA, fmt.Sprintf("<n%d/>", i))
	}
	waitFor(t, 5*time.Second, "the flaky subscription's three notifications after its retries", func() bool {
		n := 0
		for _, d := range srv.deliveries() {
			if strings.HasPrefix(d.URL, "/flaky") {
				n++
			}
		}
		return n == 3
	})
}
