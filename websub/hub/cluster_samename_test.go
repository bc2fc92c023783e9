package hub

import (
	"fmt"
	"testing"
	"time"
)

// TestClusterSameNodeName: two hub processes given the same node name (a
// copied unit file, a container template with a fixed --node) must not
// both deliver every subscription: each notification reaches each
// subscriber once in a run without failures, as with distinct names.
func TestClusterSameNodeName(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			two := be.open2(t)
			const nSubs, nNotes = 6, 5
			nodes := make([]*testHub, 2)
			for i := range nodes {
				nodes[i] = newTestHub(t, func(c *Config) {
					c.Store, c.Node, c.ClaimTTL, c.StateDir = two[i], "hub", time.Second, ""
				})
				t.Cleanup(func() { two[i].Close() })
			}
			sub := newSubscriber(t)
			for i := range nSubs {
				nodes[i%2].subscribe(t, topicA, sub.url(fmt.Sprint("/cb/", i)), nil)
			}
			time.Sleep(1500 * time.Millisecond) // claim rounds of both
			for i := 1; i <= nNotes; i++ {
				nodes[i%2].mustPublish(t, topicA, fmt.Sprintf("<n%d/>", i))
			}
			waitFor(t, 10*time.Second, "every delivery", func() bool { return len(sub.deliveries()) >= nSubs*nNotes })
			time.Sleep(time.Second)
			seen := map[string]int{}
			for _, d := range sub.deliveries() {
				seen[d.URL+" "+d.Header.Get("X-Hub-Delivery-Id")]++
			}
			dups := 0
			for _, n := range seen {
				dups += n - 1
			}
			if dups > 0 {
				t.Errorf("%d duplicate deliveries of %d: both processes named %q deliver", dups, nSubs*nNotes, "hub")
			}
		})
	}
}
