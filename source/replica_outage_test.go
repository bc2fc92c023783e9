package source

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/pgstore"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

// tcpProxy forwards loopback connections to a PostgreSQL server and can
// drop them all and refuse new ones (the server restarting, as its clients
// see it) until restored.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]struct{}
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *tcpProxy) serve(c net.Conn) {
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.mu.Unlock()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	p.conns[c], p.conns[s] = struct{}{}, struct{}{}
	p.mu.Unlock()
	go func() { io.Copy(s, c); s.Close(); c.Close() }()
	io.Copy(c, s)
	c.Close()
	s.Close()
}

// cut closes every connection and refuses new ones until restore.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

func (p *tcpProxy) restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// via returns rawURL with its host replaced by the proxy's.
func (p *tcpProxy) via(t *testing.T, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// TestReplicasDatabaseOutage: the database goes away for a while (every
// connection dropped, none accepted: a restart) and comes back while two
// replicas run. They recover without a restart of their own: one takes the
// scanner role again, changes made meanwhile are journaled once each, and
// both render them (their LISTEN is back).
func TestReplicasDatabaseOutage(t *testing.T) {
	pgtest.Skip(t)
	direct := pgtest.Database(t)
	p := newTCPProxy(t, must(url.Parse(direct)).Host)
	dbURL := p.via(t, direct)
	open := func(ctx context.Context, set string) (store.Store, error) { return pgstore.Open(ctx, dbURL, set, nil) }
	dir := t.TempDir()
	for i := range 10 {
		write(t, dir, filepath.Join("d", string(rune('a'+i))), "v1")
	}
	a := startReplica(t, open, dir, t.TempDir())
	b := startReplica(t, open, dir, t.TempDir())
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	until("identical documents", func() bool { return sameDocs(docs(t, a.src.Out()), docs(t, b.src.Out())) && urls(t, a) == 10 })
	obs, err := pgstore.Open(context.Background(), direct, "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	lastSeq := func() uint64 { s, _ := obs.Stats(context.Background()); return s.LastSeq }

	p.cut()
	write(t, dir, "d/a", "v2")
	time.Sleep(2 * time.Second)
	write(t, dir, "d/new", "new")
	p.restore()
	start := time.Now()
	until("a leader again and the changes journaled", func() bool { return (a.leads() || b.leads()) && lastSeq() >= 2 })
	t.Logf("recovered in %v", time.Since(start).Round(time.Millisecond))
	until("both replicas render the changes", func() bool {
		da, db := docs(t, a.src.Out()), docs(t, b.src.Out())
		return sameDocs(da, db) && bytes.Contains(da[".resourcesync/default/resourcelist.xml"], []byte("/d/new<"))
	})
	time.Sleep(500 * time.Millisecond)
	if n := lastSeq(); n != 2 {
		t.Errorf("journal has %d records after 2 changes", n)
	}
	if a.leads() && b.leads() {
		t.Error("both replicas lead")
	}
	if err := storetest.CheckReplay(context.Background(), obs); err != nil {
		t.Error(err)
	}
	// And once more, now that the connections are new ones.
	os.Remove(filepath.Join(dir, "d", "b"))
	until("the deletion rendered by both", func() bool {
		da, db := docs(t, a.src.Out()), docs(t, b.src.Out())
		return sameDocs(da, db) && !strings.Contains(string(da[".resourcesync/default/resourcelist.xml"]), "/d/b<")
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
