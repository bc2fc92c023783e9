package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// TestServeReplicasShareEmbeddedHub: two `serve --store postgres://...`
// replicas of one DIR embed hubs that share the database's hub state, so a
// subscription made through either replica receives the notification the
// scanner replica publishes when the collection changes.
func TestServeReplicasShareEmbeddedHub(t *testing.T) {
	pgtest.Skip(t)
	pgURL := pgtest.Database(t)
	dir := t.TempDir()
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lb := &balancer{}
	lbSrv := httptest.NewServer(lb)
	t.Cleanup(lbSrv.Close)
	base := lbSrv.URL + "/"
	args := func(i int) []string {
		return []string{"--store", pgURL, "--state", filepath.Join(t.TempDir(), fmt.Sprint("state", i)), "--base-url", base,
			"--allow-private-callbacks", "--rescan-interval", "200ms", "--no-dumps", dir}
	}
	reps := []*replicaProc{startReplicaProc(t, "A", args(0)...), startReplicaProc(t, "B", args(1)...)}
	lb.mu.Lock()
	lb.backends = []string{reps[0].addr, reps[1].addr}
	lb.mu.Unlock()

	// One subscriber per replica, each subscribed through that replica.
	var mu sync.Mutex
	got := map[string][]string{}
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, r.URL.Query().Get("hub.challenge"))
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.URL.Path] = append(got[r.URL.Path], string(b))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(sub.Close)
	client, _ := testnet.Client(t)
	topic := base + ".resourcesync/default/notifications"
	for _, r := range reps {
		resp, err := client.PostForm("http://"+r.addr+"/.resourcesync/hub", url.Values{"hub.mode": {"subscribe"},
			"hub.topic": {topic}, "hub.callback": {sub.URL + "/via-" + r.name}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("subscribe via %s: %d %s", r.name, resp.StatusCode, b)
		}
	}
	// Verified (through either replica's hub, whichever claimed the job).
	time.Sleep(500 * time.Millisecond)
	// Two changes, both notified: the scanner replica started the
	// notification channel when it took its role, before its first scan
	// (before that fix the first change after start was never notified).
	for _, name := range []string{"new1.txt", "new2.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		a, b := strings.Join(got["/via-A"], ""), strings.Join(got["/via-B"], "")
		mu.Unlock()
		if strings.Contains(a, base+"new1.txt") && strings.Contains(b, base+"new1.txt") &&
			strings.Contains(a, base+"new2.txt") && strings.Contains(b, base+"new2.txt") {
			break
		}
		if time.Now().After(deadline) {
			if c, err := pgx.Connect(context.Background(), pgURL); err == nil {
				var heads, subs string
				c.QueryRow(context.Background(), `SELECT (SELECT coalesce(string_agg(encode(topic, 'escape') || ' head ' || head, ', '), '') FROM hub_topics),
	(SELECT coalesce(string_agg(coalesce(holder, '-') || ' cursor ' || cursor, ', '), '') FROM hub_subs)`).Scan(&heads, &subs)
				t.Logf("hub state: topics %s; subscriptions %s", heads, subs)
				c.Close(context.Background())
			}
			t.Fatalf("notifications of new1.txt and new2.txt: via A %d bytes, via B %d bytes", len(a), len(b))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
