package pgstore

import (
	"context"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// blackholeProxy forwards loopback connections to target until swallow:
// from then on the connections open at that moment carry nothing either
// way, silently (no FIN, no RST), while new ones work, as when a NAT or a
// load balancer forgets an idle flow.
type blackholeProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	gen    int // connections of an older generation are swallowed
}

func newBlackholeProxy(t *testing.T, target string) *blackholeProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &blackholeProxy{ln: ln, target: target}
	var conns []net.Conn
	var cmu sync.Mutex
	t.Cleanup(func() {
		ln.Close()
		cmu.Lock()
		for _, c := range conns {
			c.Close()
		}
		cmu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			cmu.Lock()
			conns = append(conns, c, s)
			cmu.Unlock()
			p.mu.Lock()
			gen := p.gen
			p.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					if err != nil {
						dst.Close()
						return
					}
					p.mu.Lock()
					live := p.gen == gen
					p.mu.Unlock()
					if live {
						dst.Write(buf[:n])
					}
				}
			}
			go pipe(s, c)
			go pipe(c, s)
		}
	}()
	return p
}

func (p *blackholeProxy) swallow() {
	p.mu.Lock()
	p.gen++
	p.mu.Unlock()
}

// TestWatchSilentDrop: the listening connection is idle most of the time,
// and an idle flow is what middleboxes forget without a word. A node must
// notice within seconds and listen again, or it never learns of what the
// other nodes publish.
func TestWatchSilentDrop(t *testing.T) {
	pgtest.Skip(t)
	old := listenCheck
	listenCheck = 300 * time.Millisecond
	t.Cleanup(func() { listenCheck = old }) // after the stores close (cleanups run last first)
	direct := pgtest.Database(t)
	u, _ := url.Parse(direct)
	p := newBlackholeProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	s := openT(t, u.String())
	other := openT(t, direct)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	<-s.lis.ready
	p.swallow()
	time.Sleep(100 * time.Millisecond)
	if _, err := other.Append(ctx, "https://a.example/", hubstore.Entry{ContentType: "text/plain"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		select {
		case ev := <-w:
			if ev&hubstore.EventEntries != 0 {
				t.Logf("event after %v", time.Since(start).Round(time.Millisecond))
				return
			}
		case <-ctx.Done():
			t.Fatal("the append was never signalled: the listener waits on a dead connection")
		}
	}
}
