package hub

import (
	"context"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/boltstore"
)

// callbackServer is a subscriber host that counts the connections the hub
// opens to it and the protocol of each delivery.
type callbackServer struct {
	srv    *httptest.Server
	conns  atomic.Int64
	used   sync.Map // net.Conn: carried a request
	mu     sync.Mutex
	protos map[string]int // "HTTP/2.0": deliveries
	paths  map[string]int
}

func newCallbackServer(t *testing.T, overTLS bool) *callbackServer {
	c := &callbackServer{protos: map[string]int{}, paths: map[string]int{}}
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		c.mu.Lock()
		c.protos[r.Proto]++
		c.paths[r.URL.Path]++
		c.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	c.srv.Config.ConnState = func(nc net.Conn, st http.ConnState) {
		if st == http.StateNew {
			c.conns.Add(1)
		}
		if st == http.StateActive {
			c.used.Store(nc, true)
		}
	}
	if overTLS {
		c.srv.EnableHTTP2 = true
		c.srv.StartTLS()
	} else {
		c.srv.Start()
	}
	t.Cleanup(func() {
		c.srv.CloseClientConnections()
		c.srv.Close()
	})
	return c
}

func (c *callbackServer) delivered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.paths)
}

// fanOutTo subscribes n callbacks of cs (written into the store: no
// verification) and publishes one notification; it returns when each
// callback has it.
func fanOutTo(t *testing.T, cs *callbackServer, n, perHost int, mod func(*Config)) {
	t.Helper()
	topic := "http://127.0.0.1:1/changes/notification.xml"
	bs, err := boltstore.Open(filepath.Join(t.TempDir(), "hub.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	ctx := context.Background()
	expires := time.Now().Add(time.Hour).UTC()
	for i := range n {
		cb := cs.srv.URL + "/cb/" + strconv.Itoa(i)
		if err := bs.PutSubscription(ctx, hubstore.Subscription{Key: subKey(topic, cb), Topic: topic, Callback: cb, Lease: 3600, Expires: expires, Secret: "s3cret"}); err != nil {
			t.Fatal(err)
		}
	}
	th := newTestHub(t, func(c *Config) {
		c.Store = bs
		c.StateDir = ""
		c.MaxConcurrentPerHost = perHost
		if mod != nil {
			mod(c)
		}
	})
	waitFor(t, 30*time.Second, "all subscriptions held", func() bool { return th.heldCount() == n })
	if _, err := th.Publish(ctx, topic, "application/xml", []byte("<urlset/>"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "every delivery", func() bool { return cs.delivered() >= n })
}

// TestDeliveryKeepAlive: 2,000 deliveries to one plain-HTTP subscriber
// host reuse at most MaxConcurrentPerHost kept-alive HTTP/1.1
// connections: no connection per delivery.
func TestDeliveryKeepAlive(t *testing.T) {
	const n, perHost = 2000, 8
	cs := newCallbackServer(t, false)
	fanOutTo(t, cs, n, perHost, nil)
	if c := cs.conns.Load(); c > perHost {
		t.Errorf("%d connections for %d deliveries, want at most %d (MaxConcurrentPerHost, kept alive)", c, n, perHost)
	}
	if p := cs.protos["HTTP/1.1"]; p != n {
		t.Errorf("protocols %v, want HTTP/1.1 for all %d", cs.protos, n)
	}
}

// TestDeliveryHTTP2: a subscriber over TLS (a certificate of a test CA,
// trusted through Config.RootCAs) that offers h2 in ALPN gets every
// delivery over HTTP/2, all on one connection (multiplexed, at most
// MaxConcurrentPerHost streams at once).
func TestDeliveryHTTP2(t *testing.T) {
	const n, perHost = 500, 8
	cs := newCallbackServer(t, true)
	roots := x509.NewCertPool()
	roots.AddCert(cs.srv.Certificate())
	fanOutTo(t, cs, n, perHost, func(c *Config) { c.RootCAs = roots })
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if p := cs.protos["HTTP/2.0"]; p != n {
		t.Errorf("protocols %v, want HTTP/2.0 for all %d", cs.protos, n)
	}
	used := 0
	cs.used.Range(func(any, any) bool { used++; return true })
	t.Logf("%d connections dialled, %d used", cs.conns.Load(), used)
	if c := cs.conns.Load(); c != 1 {
		t.Errorf("%d connections for %d deliveries over HTTP/2, want 1", c, n)
	}
}
