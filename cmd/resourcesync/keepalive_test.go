package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// TestSyncReusesConnections: a baseline of N small files by plain GETs
// (--no-dumps) with W workers opens about W connections, not one per file:
// sync's own client (syncClient, not a test's) keeps them alive, and every
// body is read to its end and closed so that its connection goes back to
// the pool. The bound leaves room for discovery and the documents.
func TestSyncReusesConnections(t *testing.T) {
	const n, workers = 400, 4
	dir := t.TempDir()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%d", i%7), fmt.Sprintf("f%03d.bin", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat(fmt.Sprint(i), 100+i%50)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	base := "http://" + ln.Addr().String() + "/"
	src, err := source.Open(source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(),
		ChangeListPeriod: time.Hour, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	var gets atomic.Int64
	h := src.Handler(nil)
	srv := &httptest.Server{Listener: cl, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		h.ServeHTTP(w, r)
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	dest := filepath.Join(t.TempDir(), "mirror")
	code, out, errOut := runCLI(t, "sync", "--progress", "quiet", "--no-dumps", "--workers", fmt.Sprint(workers), base, dest)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if got := cl.n.Load(); got > workers+4 {
		t.Errorf("%d connections for %d requests with %d workers: want at most %d", got, gets.Load(), workers, workers+4)
	} else {
		t.Logf("%d connections for %d requests with %d workers", got, gets.Load(), workers)
	}
}
