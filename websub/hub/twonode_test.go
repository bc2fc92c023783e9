package hub

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/memstore"
)

// heldCount is how many subscriptions this node delivers.
func (h *Hub) heldCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Two hubs on one in-memory state: subscriptions through either, publishes
// to either, one node stopped abruptly in the middle of a fan-out (its
// store handle closed, then its context cancelled: no flush, no release).
// The other node takes over the dead node's subscriptions once their
// claims expire and resumes from the stored cursors: every subscriber gets
// every notification, the first copies in order.
func TestTwoNodesSurviveAbruptStop(t *testing.T) {
	const (
		nSubs  = 20
		nNotes = 20
		ttl    = time.Second
	)
	db := memstore.New(nil)
	stores := []hubstore.Store{db.Open(), db.Open()}
	nodes := make([]*testHub, 2)
	for i := range nodes {
		nodes[i] = newTestHub(t, func(c *Config) {
			c.Store, c.Node, c.ClaimTTL = stores[i], fmt.Sprint("node-", i), ttl
			c.StateDir = ""
		})
		t.Cleanup(func() { stores[i].Close() })
	}
	a, b := nodes[0], nodes[1]
	sub := newSubscriber(t)
	sub.delay = 15 * time.Millisecond // a fan-out of a few notifications takes a while
	for i := range nSubs {
		nodes[i%2].subscribe(t, topicA, sub.url(fmt.Sprint("/cb/", i)), nil)
	}
	waitFor(t, 10*time.Second, "subscriptions spread over both nodes", func() bool {
		ha, hb := a.heldCount(), b.heldCount()
		return ha > 0 && hb > 0 && ha+hb == nSubs
	})
	t.Logf("node A holds %d, node B %d", a.heldCount(), b.heldCount())

	// seqs returns, per subscriber, the sequence numbers received (first
	// copies only) and the number of duplicates.
	seqs := func() (map[string][]int, int) {
		out := map[string][]int{}
		seen := map[string]bool{}
		dups := 0
		for _, d := range sub.deliveries() {
			id := d.Header.Get("X-Hub-Delivery-Id")
			if seen[d.URL+" "+id] {
				dups++
				continue
			}
			seen[d.URL+" "+id] = true
			n, _ := strconv.Atoi(id[strings.LastIndexByte(id, '-')+1:])
			out[d.URL] = append(out[d.URL], n)
		}
		return out, dups
	}
	for i := 1; i <= nNotes/2; i++ {
		nodes[i%2].mustPublish(t, topicA, fmt.Sprintf("<n%d/>", i))
	}
	// Abrupt stop of A while its subscribers are still being served.
	if got, _ := seqs(); len(sub.deliveries()) >= nSubs*nNotes/2 {
		t.Fatalf("the fan-out finished before the stop (%d subscribers served); the test proves nothing", len(got))
	}
	stores[0].Close()
	a.cancel()
	<-a.done
	stopped := time.Now()
	for i := nNotes/2 + 1; i <= nNotes; i++ {
		b.mustPublish(t, topicA, fmt.Sprintf("<n%d/>", i))
	}
	waitFor(t, 20*time.Second, "every subscriber to get every notification", func() bool {
		got, _ := seqs()
		for i := range nSubs {
			if len(got[fmt.Sprint("/cb/", i)]) < nNotes {
				return false
			}
		}
		return true
	})
	got, dups := seqs()
	for i := range nSubs {
		s := got[fmt.Sprint("/cb/", i)]
		for j, n := range s {
			if n != j+1 {
				t.Fatalf("subscriber %d got %v: not 1..%d in order", i, s, nNotes)
			}
		}
	}
	if b.heldCount() != nSubs {
		t.Errorf("node B holds %d subscriptions, want all %d", b.heldCount(), nSubs)
	}
	t.Logf("all delivered %v after the stop; %d duplicate deliveries (at-least-once)", time.Since(stopped).Round(time.Millisecond), dups)
}

// A subscription made through one node and notifications published to
// the other are delivered (the nodes learn of each other's changes by
// Watch, without polling), and a clean stop hands the claims over at once.
func TestTwoNodesCleanHandover(t *testing.T) {
	db := memstore.New(nil)
	stores := []hubstore.Store{db.Open(), db.Open()}
	nodes := make([]*testHub, 2)
	for i := range nodes {
		nodes[i] = newTestHub(t, func(c *Config) {
			c.Store, c.Node, c.ClaimTTL = stores[i], fmt.Sprint("node-", i), time.Minute // no expiry in this test
			c.StateDir = ""
		})
		t.Cleanup(func() { stores[i].Close() })
	}
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
	// With a one-minute ttl, only the release lets B deliver this soon.
	waitFor(t, 5*time.Second, "delivery by B of A's subscriptions", func() bool { return len(sub.deliveries()) == 12 })
	if n := b.heldCount(); n != 4 {
		t.Fatalf("B holds %d", n)
	}
	for _, d := range sub.deliveries() {
		if n := strings.Count(d.Body, "<"); n != 1 {
			t.Fatalf("body %q", d.Body)
		}
	}
}
