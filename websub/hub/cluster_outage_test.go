package hub

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/pgstore"
)

// cutProxy forwards loopback connections to target; cut closes them all
// and refuses new ones (the database restarting, as clients see it) until
// restore.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				s, err := net.Dial("tcp", target)
				p.mu.Lock()
				if err != nil || p.down {
					p.mu.Unlock()
					c.Close()
					if s != nil {
						s.Close()
					}
					return
				}
				p.conns[c], p.conns[s] = true, true
				p.mu.Unlock()
				go func() { io.Copy(s, c); s.Close() }()
				io.Copy(c, s)
				c.Close()
			}()
		}
	}()
	return p
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

func (p *cutProxy) restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// TestClusterDatabaseOutage: the database goes away for 3 s (every
// connection dropped, none accepted) and comes back. The hub recovers by
// itself: its subscriptions are claimed again, it hears of new entries
// (LISTEN again) and delivers what is published after the outage, and a
// publish during the outage gets a 503 (try again), not a hang.
func TestClusterDatabaseOutage(t *testing.T) {
	pgtest.Skip(t)
	direct := pgtest.Database(t)
	u, _ := url.Parse(direct)
	p := newCutProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	st, err := pgstore.Open(context.Background(), u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	th := newTestHub(t, func(c *Config) { c.Store, c.StateDir, c.ClaimTTL = st, "", time.Second })
	sub := newSubscriber(t)
	th.subscribe(t, topicA, sub.url("/cb"), nil)
	th.mustPublish(t, topicA, "<before/>")
	waitFor(t, 5*time.Second, "the first delivery", func() bool { return len(sub.deliveries()) == 1 })

	p.cut()
	start := time.Now()
	code, msg := th.fatPing(t, topicA, "application/xml", []byte("<during/>"), nil)
	if code != 503 {
		t.Errorf("publish during the outage: %d %s (after %v)", code, msg, time.Since(start).Round(time.Millisecond))
	}
	time.Sleep(3 * time.Second)
	p.restore()
	// Another node (a direct connection) publishes: this one must hear of
	// it and deliver.
	other, err := Open(Config{Store: mustOpenPG(t, direct), Node: "other", URL: th.URL, AllowPrivateCallbacks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Publish(context.Background(), topicA, "application/xml", []byte("<after/>"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the delivery after the outage", func() bool {
		for _, d := range sub.deliveries() {
			if d.Body == "<after/>" {
				return true
			}
		}
		return false
	})
}

func mustOpenPG(t *testing.T, url string) *pgstore.Store {
	s, err := pgstore.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
