package hub

import (
	"context"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/boltstore"
)

// countingStore counts the store reads a fan-out could make per
// subscription, and the cursor writes.
type countingStore struct {
	hubstore.Store
	entries, head, heads, get atomic.Int64
	updateCalls, updates      atomic.Int64
}

func (c *countingStore) Entries(ctx context.Context, topic string, after uint64, max int) ([]hubstore.Entry, error) {
	c.entries.Add(1)
	return c.Store.Entries(ctx, topic, after, max)
}

func (c *countingStore) Head(ctx context.Context, topic string) (uint64, error) {
	c.head.Add(1)
	return c.Store.Head(ctx, topic)
}

func (c *countingStore) Heads(ctx context.Context) (map[string]uint64, error) {
	c.heads.Add(1)
	return c.Store.Heads(ctx)
}

func (c *countingStore) GetSubscription(ctx context.Context, key string) (hubstore.Subscription, error) {
	c.get.Add(1)
	return c.Store.GetSubscription(ctx, key)
}

func (c *countingStore) UpdateCursors(ctx context.Context, node string, us []hubstore.CursorUpdate) ([]string, error) {
	c.updateCalls.Add(1)
	c.updates.Add(int64(len(us)))
	return c.Store.UpdateCursors(ctx, node, us)
}

func (c *countingStore) reset() {
	for _, n := range []*atomic.Int64{&c.entries, &c.head, &c.heads, &c.get, &c.updateCalls, &c.updates} {
		n.Store(0)
	}
}

// One notification to 2,000 subscriptions whose callbacks share one
// loopback host: every callback gets it exactly once, byte for byte and
// with the same delivery headers; the deliveries to the host overlap but
// never exceed MaxConcurrentPerHost; the store is not read per
// subscription (the entry comes from the cache, the topic head from
// memory); and the advanced cursors are written in one batch.
func TestFanOutOneHostNoPerSubscriptionReads(t *testing.T) {
	const n, perHost = 2000, 8
	sub := newSubscriber(t)
	sub.delay = time.Millisecond // so that deliveries overlap
	topic := "http://127.0.0.1:1/changes/notification.xml"
	bs, err := boltstore.Open(filepath.Join(t.TempDir(), "hub.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	cs := &countingStore{Store: bs}
	ctx := context.Background()
	expires := time.Now().Add(time.Hour).UTC()
	for i := range n {
		cb := sub.url("/cb/" + strconv.Itoa(i))
		if err := bs.PutSubscription(ctx, hubstore.Subscription{Key: subKey(topic, cb), Topic: topic, Callback: cb, Lease: 3600, Expires: expires}); err != nil {
			t.Fatal(err)
		}
	}
	th := newTestHub(t, func(c *Config) {
		c.Store = cs
		c.StateDir = ""
		c.MaxConcurrentPerHost = perHost
		c.FlushInterval = time.Hour // flushed by hand below: one batch
		c.SweepInterval = time.Hour // a sweep reads every subscription (not per notification)
	})
	waitFor(t, 30*time.Second, "all subscriptions held", func() bool { return th.heldCount() == n })

	cs.reset()
	body := "<urlset><url><loc>http://127.0.0.1:1/a</loc></url></urlset>"
	if _, err := th.Publish(ctx, topic, "application/xml", []byte(body), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "every delivery", func() bool { return len(sub.deliveries()) >= n })
	time.Sleep(50 * time.Millisecond) // a duplicate would arrive now

	seen := map[string]int{}
	var id, link string
	for _, d := range sub.deliveries() {
		seen[d.URL]++
		if d.Body != body || d.Header.Get("Content-Type") != "application/xml" {
			t.Fatalf("delivery to %s: %q (%s)", d.URL, d.Body, d.Header.Get("Content-Type"))
		}
		if id == "" {
			id, link = d.Header.Get("X-Hub-Delivery-Id"), d.Header.Get("Link")
		}
		if d.Header.Get("X-Hub-Delivery-Id") != id || d.Header.Get("Link") != link || d.Header.Get("X-Hub-Attempt") != "1" {
			t.Fatalf("delivery to %s: headers differ: %v", d.URL, d.Header)
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct callbacks got the notification, want %d", len(seen), n)
	}
	for u, c := range seen {
		if c != 1 {
			t.Fatalf("%s got it %d times", u, c)
		}
	}
	if want := deliveryID(topic, 1); id != want {
		t.Errorf("X-Hub-Delivery-Id %q, want %q", id, want)
	}
	if m := sub.maxInfl.Load(); m > perHost || m < 2 {
		t.Errorf("at most %d deliveries in flight to the host, want 2..%d", m, perHost)
	}
	// Reads: none per subscription. Heads is read once per append event
	// (the watch), whatever the number of subscriptions.
	if e, hd, g := cs.entries.Load(), cs.head.Load(), cs.get.Load(); e != 0 || hd != 0 || g != 0 {
		t.Errorf("store reads during the fan-out: Entries %d, Head %d, GetSubscription %d; want none", e, hd, g)
	}
	if hs := cs.heads.Load(); hs > 2 {
		t.Errorf("Heads read %d times for one notification", hs)
	}
	if calls := cs.updateCalls.Load(); calls != 0 {
		t.Errorf("%d cursor writes before the flush", calls)
	}
	th.flush()
	if calls, us := cs.updateCalls.Load(), cs.updates.Load(); calls != 1 || us != n {
		t.Errorf("flush: %d UpdateCursors calls with %d updates, want 1 with %d", calls, us, n)
	}
	behind := 0
	for r, err := range bs.Subscriptions(ctx, topic) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Cursor != 1 {
			behind++
		}
	}
	if behind != 0 {
		t.Errorf("%d stored cursors not at 1 after the flush", behind)
	}
}
