package status

import (
	"context"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// stallStore: Stats takes statsDelay; an inventory pass blocks until
// release is closed (a huge set whose pass takes minutes).
type stallStore struct {
	store.Store
	statsDelay atomic.Int64
	release    chan struct{}
}

func (s *stallStore) Stats(ctx context.Context) (store.Stats, error) {
	time.Sleep(time.Duration(s.statsDelay.Load()))
	return s.Store.Stats(ctx)
}

func (s *stallStore) ResourcesIn(ctx context.Context, from, to string) iter.Seq2[store.Resource, error] {
	return func(yield func(store.Resource, error) bool) {
		select {
		case <-s.release:
		case <-ctx.Done():
			yield(store.Resource{}, ctx.Err())
			return
		}
		for r, err := range s.Store.ResourcesIn(ctx, from, to) {
			if !yield(r, err) {
				return
			}
		}
	}
}

// TestWaitBoundedDuringLongPass: while a long inventory pass runs, a
// request whose refresh is slow (Stats slower than Wait: a large
// PostgreSQL set) still answers after about Wait, not when the pass ends.
func TestWaitBoundedDuringLongPass(t *testing.T) {
	st := &stallStore{Store: openBolt(t), release: make(chan struct{})}
	defer close(st.release)
	h := New(Config{BaseURL: "http://src.test/", Sets: []Set{{Name: "s", Store: st}}, Wait: 50 * time.Millisecond,
		MaxAge: time.Nanosecond, BytesInterval: -1})
	defer h.Close()
	get1 := func() (int, time.Duration) {
		start := time.Now()
		done := make(chan int, 1)
		go func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
			done <- rec.Code
		}()
		select {
		case c := <-done:
			return c, time.Since(start)
		case <-time.After(5 * time.Second):
			return 0, time.Since(start)
		}
	}
	if c, d := get1(); c != http.StatusOK {
		t.Fatalf("first request: %d after %v", c, d)
	}
	st.statsDelay.Store(int64(300 * time.Millisecond))
	if c, d := get1(); c != http.StatusOK || d > 2*time.Second {
		t.Fatalf("second request: %d after %v (the pass is still running)", c, d)
	}
}

// TestHubNodeNotShown: the public page does not name the hub's node (its
// default is the server's host name and process ID).
func TestHubNodeNotShown(t *testing.T) {
	h := New(Config{BaseURL: "http://src.test/", Sets: []Set{{Name: "s", Store: openBolt(t), Topic: "http://src.test/.resourcesync/s/notifications"}},
		HubURL: "http://src.test/.resourcesync/hub", Hub: fakeHub{}, Wait: 10 * time.Second})
	defer h.Close()
	if pg := get(t, h); strings.Contains(pg.body, "<dd>n1</dd>") || !strings.Contains(pg.body, "data-figure=\"subscriptions\"") {
		t.Error("the page names the hub's node (or lacks the hub section)")
	}
}

// TestHostileNames: resource paths and set names with markup and script
// URLs stay text on the page.
func TestHostileNames(t *testing.T) {
	st := openBolt(t)
	now := time.Now().UTC()
	var b store.Batch
	b.Baseline = true
	for _, p := range []string{`"><svg onload=alert(1)>.txt`, `javascript:alert(1)`, `<script>alert(1)</script>`, "a\x00b\xff.txt", `' onmouseover='alert(1)`} {
		b.Changes = append(b.Changes, store.Change{Kind: rs.Created, Time: now, Resource: store.Resource{Path: p, Size: 1, LastMod: now}})
	}
	if _, _, err := st.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Apply(context.Background(), store.Batch{Changes: []store.Change{{Kind: rs.Updated, Time: now, Resource: store.Resource{Path: `javascript:alert(1)`, Size: 2, LastMod: now}}}}); err != nil {
		t.Fatal(err)
	}
	h := New(Config{BaseURL: "http://src.test/", Sets: []Set{{Name: `x"><img src=x onerror=alert(1)>`, Store: st, ResourceBase: "http://src.test/"}}, Wait: 10 * time.Second})
	defer h.Close()
	pg := get(t, h)
	for _, bad := range []string{"<svg onload", "<script>", "<img src=x", `href="javascript:`, "' onmouseover='"} {
		if i := strings.Index(pg.body, bad); i >= 0 {
			t.Errorf("the page contains %q: %s", bad, pg.body[max(0, i-200):min(len(pg.body), i+100)])
		}
	}
}
