package hub

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/pgtest"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/pgstore"
)

// pgNodes opens two hubs on one fresh PostgreSQL database, each through
// a pgstore handle of its own, as two processes would.
func pgNodes(t *testing.T, ttl time.Duration) ([]*partitionable, []*testHub) {
	t.Helper()
	pgtest.Skip(t)
	url := pgtest.Database(t)
	stores := make([]*partitionable, 2)
	nodes := make([]*testHub, 2)
	for i := range nodes {
		st, err := pgstore.Open(context.Background(), url, &pgstore.Options{MaxConns: 8})
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = &partitionable{Store: st}
		nodes[i] = newTestHub(t, func(c *Config) {
			c.Store, c.Node, c.ClaimTTL = stores[i], fmt.Sprint("node-", i), ttl
			c.StateDir = ""
		})
		t.Cleanup(func() { st.Close() })
	}
	return stores, nodes
}

// On PostgreSQL, a node that cannot renew its claims (its Claim calls
// fail) stops delivering before the other node takes the subscription
// over on the server's clock: the subscriber never has two deliveries in
// flight, and gets every notification, the first copies in order.
func TestClusterPGPartitionedNodeStopsFirst(t *testing.T) {
	stores, nodes := pgNodes(t, 2*time.Second)
	sub := newSubscriber(t)
	sub.delay = 150 * time.Millisecond
	nodes[0].subscribe(t, topicA, sub.url("/cb"), nil)
	holder := -1
	waitFor(t, 10*time.Second, "a node to hold the subscription", func() bool {
		for i, n := range nodes {
			if n.heldCount() == 1 {
				holder = i
				return true
			}
		}
		return false
	})
	const n = 24 // 3.6 s of deliveries: the cut falls in the middle
	for i := 1; i <= n; i++ {
		nodes[i%2].mustPublish(t, topicA, fmt.Sprintf("<n%d/>", i))
	}
	time.Sleep(300 * time.Millisecond)
	stores[holder].cut.Store(true)
	cut := time.Now()
	other := nodes[1-holder]
	waitFor(t, 20*time.Second, "all notifications", func() bool {
		seen := map[string]bool{}
		for _, d := range sub.deliveries() {
			seen[d.Header.Get("X-Hub-Delivery-Id")] = true
		}
		return len(seen) == n
	})
	if other.heldCount() != 1 {
		t.Errorf("the other node does not hold the subscription")
	}
	if m := sub.maxInfl.Load(); m != 1 {
		t.Fatalf("%d deliveries at once to one subscriber: two nodes delivered together", m)
	}
	last, seen := 0, map[string]bool{}
	for _, d := range sub.deliveries() {
		id := d.Header.Get("X-Hub-Delivery-Id")
		if seen[id] {
			continue
		}
		seen[id] = true
		k, _ := strconv.Atoi(id[strings.LastIndexByte(id, '-')+1:])
		if k != last+1 {
			t.Fatalf("got %d after %d", k, last)
		}
		last = k
	}
	t.Logf("all %d delivered %v after the cut, %d deliveries in all", n, time.Since(cut).Round(time.Millisecond), len(sub.deliveries()))
}

// On PostgreSQL, a subscription made through one node and notifications
// published to the other are delivered (Watch by LISTEN/NOTIFY), and a
// clean stop hands the claims over at once (Release), well before the
// one-minute leases would run out.
func TestClusterPGCleanHandover(t *testing.T) {
	_, nodes := pgNodes(t, time.Minute)
	a, b := nodes[0], nodes[1]
	sub := newSubscriber(t)
	for i := range 4 {
		nodes[i%2].subscribe(t, topicA, sub.url(fmt.Sprint("/cb/", i)), nil)
	}
	waitFor(t, 10*time.Second, "both nodes to hold subscriptions", func() bool {
		return a.heldCount() > 0 && b.heldCount() > 0 && a.heldCount()+b.heldCount() == 4
	})
	a.mustPublish(t, topicA, "<one/>")
	b.mustPublish(t, topicA, "<two/>")
	waitFor(t, 5*time.Second, "8 deliveries", func() bool { return len(sub.deliveries()) == 8 })
	a.stop() // clean: flush and release
	b.mustPublish(t, topicA, "<three/>")
	waitFor(t, 5*time.Second, "delivery by B of A's subscriptions", func() bool { return len(sub.deliveries()) == 12 })
	if n := b.heldCount(); n != 4 {
		t.Fatalf("B holds %d", n)
	}
}
