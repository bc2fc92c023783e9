package hub

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
)

// TestClusterStalledStore: PostgreSQL cannot answer (a table lock held by
// a maintenance job, a failover): a publish or a subscription request
// gets a 503 "try again" within seconds, not a wait as long as the stall.
func TestClusterStalledStore(t *testing.T) {
	pgtest.Skip(t)
	old := storeTimeout
	storeTimeout = time.Second
	t.Cleanup(func() { storeTimeout = old })
	ctx := context.Background()
	dbURL := pgtest.Database(t)
	st := mustOpenPG(t, dbURL)
	th := newTestHub(t, func(c *Config) { c.Store, c.StateDir = st, "" })
	sub := newSubscriber(t)
	th.mustPublish(t, topicA, "<before/>")
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE hub_topics, hub_jobs IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	release := time.AfterFunc(8*time.Second, func() { tx.Rollback(ctx) })
	defer release.Stop()
	start := time.Now()
	code, msg := th.fatPing(t, topicA, "application/xml", []byte("<during/>"), nil)
	if took := time.Since(start); code != http.StatusServiceUnavailable || took > 4*time.Second {
		t.Errorf("publish during the stall: %d %s after %v; want 503 within seconds", code, msg, took.Round(time.Millisecond))
	}
	start = time.Now()
	code, msg = th.post(t, url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topicA}, "hub.callback": {sub.url("/cb")}})
	if took := time.Since(start); code != http.StatusServiceUnavailable || took > 4*time.Second {
		t.Errorf("subscribe during the stall: %d %s after %v; want 503 within seconds", code, msg, took.Round(time.Millisecond))
	}
	tx.Rollback(ctx)
	th.mustPublish(t, topicA, "<after/>")
}
