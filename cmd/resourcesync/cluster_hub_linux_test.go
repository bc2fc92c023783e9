package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// clusterSubscriber is a loopback callback: it answers verification and
// records the bodies delivered, in arrival order.
type clusterSubscriber struct {
	srv   *httptest.Server
	delay time.Duration

	mu       sync.Mutex
	verified bool
	got      []string    // bodies in arrival order
	at       []time.Time // when each of those requests arrived
}

func newClusterSubscriber(t *testing.T, delay time.Duration) *clusterSubscriber {
	c := &clusterSubscriber{delay: delay}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			c.mu.Lock()
			c.verified = true
			c.mu.Unlock()
			io.WriteString(w, r.URL.Query().Get("hub.challenge"))
			return
		}
		start := time.Now()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return // the hub died mid-request: it was not delivered
		}
		time.Sleep(c.delay) // a fan-out long enough to kill a node in it
		c.mu.Lock()
		c.got = append(c.got, string(body))
		c.at = append(c.at, start)
		c.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// distinct returns the bodies received with repeats collapsed (each
// kept where it first arrived): at-least-once allows a redelivery of
// what came before, and what is new must keep the publish order.
func (c *clusterSubscriber) distinct() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, b := range c.got {
		if !seen[b] {
			seen[b] = true
			out = append(out, b)
		}
	}
	return out
}

// firstAfter returns the arrival of the first request that came after t.
func (c *clusterSubscriber) firstAfter(t time.Time) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.at {
		if a.After(t) {
			return a, true
		}
	}
	return time.Time{}, false
}

type hubNode struct {
	name, addr string
	cmd        *exec.Cmd
	log        string
}

// startHubNode runs `resourcesync hub` in a process of its own (the test
// binary, see TestMain), so that it can be killed with SIGKILL.
func startHubNode(t *testing.T, name, store, hubURL string, extra ...string) *hubNode {
	n := &hubNode{name: name, addr: freeAddr(t), log: filepath.Join(t.TempDir(), name+".log")}
	args := append([]string{"hub", "--addr", n.addr, "--store", store, "--node", name, "--url", hubURL,
		"--allow-private-callbacks", "--verbose", "--max-per-host", "64", "--publish-rate", "1000"}, extra...)
	n.cmd = memCmd(args...)
	f, err := os.Create(n.log)
	if err != nil {
		t.Fatal(err)
	}
	n.cmd.Stdout, n.cmd.Stderr = f, f
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() {
		n.cmd.Process.Kill()
		n.cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(n.log)
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			t.Logf("%s log (tail):\n%s", name, b)
		}
	})
	return n
}

func waitHealthy(t *testing.T, client *http.Client, n *hubNode) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := client.Get("http://" + n.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy: %v", n.name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHubClusterSurvivesSIGKILL runs two `hub --store postgres://...`
// nodes on one database, spreads subscriptions over both, publishes
// alternately to either, SIGKILLs one in the middle of the fan-out, and
// requires every subscriber to get every notification, in order
// (repeats allowed: at-least-once).
func TestHubClusterSurvivesSIGKILL(t *testing.T) {
	pgtest.Skip(t)
	subs, notes, delay := 50, 20, 20*time.Millisecond
	if testing.Short() {
		subs, notes = 12, 8
	}
	dbURL := pgtest.Database(t)
	store := dbURL
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	db, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())

	// Both nodes are "behind one URL": the same --url (rel="hub").
	hubURL := "http://hub.invalid/"
	ttl := []string{"--claim-ttl", "2s"}
	a := startHubNode(t, "node-a", store, hubURL, ttl...)
	b := startHubNode(t, "node-b", store, hubURL, ttl...)
	client, _ := testnet.Client(t)
	waitHealthy(t, client, a)
	waitHealthy(t, client, b)
	nodes := []*hubNode{a, b}

	topic := "http://127.0.0.1:1/changes.xml"
	cs := make([]*clusterSubscriber, subs)
	byCallback := map[string]int{}
	for i := range cs {
		cs[i] = newClusterSubscriber(t, delay)
		cb := cs[i].srv.URL + "/cb"
		byCallback[cb] = i
		resp, err := client.PostForm("http://"+nodes[i%2].addr+"/", url.Values{"hub.mode": {"subscribe"},
			"hub.topic": {topic}, "hub.callback": {cb}, "hub.lease_seconds": {"3600"}})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("subscribe %d: %d %s", i, resp.StatusCode, body)
		}
	}

	// Wait for every subscription to be verified and for the claims to be
	// spread over both nodes.
	holders := func() map[string]string { // callback -> node
		rows, _ := db.Query(ctx, `SELECT callback, coalesce(holder, '') FROM hub_subs WHERE lease_until > now()`)
		out := map[string]string{}
		var cb []byte
		var h string
		if _, err := pgx.ForEachRow(rows, []any{&cb, &h}, func() error {
			node, _, _ := strings.Cut(h, "~") // the hub claims as NODE~suffix
			out[string(cb)] = node
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	var held map[string]string
	deadline := time.Now().Add(30 * time.Second)
	for {
		held = holders()
		per := map[string]int{}
		for _, h := range held {
			per[h]++
		}
		if len(held) == subs && per["node-a"] > 0 && per["node-b"] > 0 {
			t.Logf("claims: node-a %d, node-b %d", per["node-a"], per["node-b"])
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscriptions held %d of %d, per node %v", len(held), subs, per)
		}
		time.Sleep(50 * time.Millisecond)
	}

	publish := func(i int) {
		n := nodes[i%2]
		req, _ := http.NewRequest(http.MethodPost, "http://"+n.addr+"/", strings.NewReader(fmt.Sprintf("<n>%d</n>", i)))
		req.Header.Set("Content-Type", "application/xml")
		req.Header.Set("Link", "<"+topic+`>; rel="self", <`+hubURL+`>; rel="hub"`)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("publish %d to %s: %v", i, n.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("publish %d to %s: %d %s", i, n.name, resp.StatusCode, body)
		}
	}
	total := func() int {
		n := 0
		for _, c := range cs {
			c.mu.Lock()
			n += len(c.got)
			c.mu.Unlock()
		}
		return n
	}
	for i := range notes {
		publish(i)
	}
	// Kill node-b in the middle of the fan-out.
	for total() < subs*notes/4 {
		if ctx.Err() != nil {
			t.Fatalf("fan-out stalled at %d deliveries", total())
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := b.cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	atKill := total()
	b.cmd.Wait()

	want := make([]string, notes)
	for i := range want {
		want[i] = fmt.Sprintf("<n>%d</n>", i)
	}
	for {
		done := 0
		for _, c := range cs {
			if len(c.distinct()) >= notes {
				done++
			}
		}
		if done == subs {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("after the kill, %d of %d subscribers have all %d notifications", done, subs, notes)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var takeover time.Duration
	dups := 0
	for i, c := range cs {
		if got := c.distinct(); !slices.Equal(got, want) {
			t.Errorf("subscriber %d received %q, want %q", i, got, want)
		}
		c.mu.Lock()
		dups += len(c.got) - notes
		c.mu.Unlock()
		if held[c.srv.URL+"/cb"] == "node-b" {
			if at, ok := c.firstAfter(killed); ok {
				takeover = max(takeover, at.Sub(killed))
			}
		}
	}
	t.Logf("%d subscribers × %d notifications; node-b SIGKILLed after %d of %d deliveries; its subscriptions resumed on node-a within %v (claim ttl 2s); %d repeated deliveries",
		subs, notes, atKill, subs*notes, takeover.Round(time.Millisecond), dups)
	if takeover > 10*time.Second {
		t.Errorf("takeover took %v", takeover)
	}
}
