package httpserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// start serves h under o on 127.0.0.1 and returns the server and its
// address.
func start(t *testing.T, h http.Handler, o Options) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(h, o)
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return s, ln.Addr().String()
}

func TestCapFor(t *testing.T) {
	for _, tc := range []struct {
		nofile uint64
		want   int
	}{
		{0, minConns}, {64, minConns}, {96, minConns}, {128, 32}, {256, 96}, {1024, 480}, {20000, maxConns}, {1 << 20, maxConns},
	} {
		if got := capFor(tc.nofile); got != tc.want {
			t.Errorf("capFor(%d) = %d, want %d", tc.nofile, got, tc.want)
		}
	}
	if n := DefaultMaxConns(); n < minConns || n > maxConns {
		t.Errorf("DefaultMaxConns() = %d", n)
	}
}

// get makes one request on a new connection and returns the body.
func get(addr, path string) (string, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestFloodEvicted: with every slot taken by connections without a
// request in progress (idle keep-alive ones, ones that sent nothing,
// ones sending their headers a byte at a time), a new client is served,
// the oldest of them closed to make room; the open count never passes
// the cap.
func TestFloodEvicted(t *testing.T) {
	const max = 8
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), Options{MaxConns: max})
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	for i := range 3 * max {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		flood = append(flood, c)
		switch i % 3 {
		case 0: // keep-alive, idle after one request
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			// net/http flushes the response before it marks the
			// connection idle; under load the mark can come after
			// the next connections were accepted, and until then the
			// connection is rightly not a candidate for eviction.
			waitIdle(t, s, c.LocalAddr().String())
		case 1: // slowloris: headers begun
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHo")
		}
	}
	for range 3 {
		if body, err := get(addr, "/"); err != nil || body != "ok" {
			t.Fatalf("legitimate client: %q, %v (open %d, evicted %d)", body, err, s.Open(), s.Evicted())
		}
	}
	if n := s.Open(); n > max {
		t.Errorf("%d connections open, cap %d", n, max)
	}
	if s.Evicted() < 2*max {
		t.Errorf("evicted %d, want at least %d", s.Evicted(), 2*max)
	}
	// The idle ones were closed first: the oldest is closed.
	flood[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := flood[0].Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("oldest idle connection: read %v, want EOF (closed)", err)
	}
}

// waitIdle waits until s counts the connection from local idle.
func waitIdle(t *testing.T, s *Server, local string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.lim.mu.Lock()
		idle := false
		for c := range s.lim.conns {
			if c.RemoteAddr().String() == local && c.state == http.StateIdle {
				idle = true
			}
		}
		s.lim.mu.Unlock()
		if idle {
			return
		}
	}
	t.Fatalf("connection from %s never idle", local)
}

// TestBusyConnectionsNotEvicted: a connection whose request is in
// progress is never closed for a newcomer, who waits for a slot.
func TestBusyConnectionsNotEvicted(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/busy" {
			started <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	}), Options{MaxConns: 2})
	errc := make(chan error, 2)
	for range 2 {
		go func() { _, err := get(addr, "/busy"); errc <- err }()
	}
	<-started
	<-started
	got := make(chan error, 1)
	go func() { _, err := get(addr, "/"); got <- err }()
	select {
	case err := <-got:
		t.Fatalf("served past the cap while both slots were busy: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	for range 2 {
		if err := <-errc; err != nil {
			t.Errorf("busy request: %v", err)
		}
	}
	if err := <-got; err != nil {
		t.Errorf("waiting client: %v", err)
	}
	if s.Evicted() != 0 {
		t.Errorf("evicted %d busy connections", s.Evicted())
	}
}

// TestIdleTimeout: a keep-alive connection is closed after IdleTimeout.
func TestIdleTimeout(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), Options{IdleTimeout: 100 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("idle keep-alive connection: %v, want EOF", err)
	}
}

// slowRead reads the response to GET path through a small receive
// buffer, chunk bytes every pause, and returns the body.
func slowRead(t *testing.T, addr, path string, chunk int, pause time.Duration) []byte {
	t.Helper()
	d := net.Dialer{Control: nil}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.(*net.TCPConn).SetReadBuffer(64 << 10)
	fmt.Fprintf(nc, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path)
	br := bufio.NewReaderSize(nc, chunk)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	buf := make([]byte, chunk)
	for {
		n, err := io.ReadFull(resp.Body, buf)
		out.Write(buf[:n])
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return out.Bytes()
		}
		if err != nil {
			t.Fatalf("after %d bytes: %v", out.Len(), err)
		}
		time.Sleep(pause)
	}
}

// TestSlowSteadyDownload: a response that takes many times WriteStall
// to a client reading slowly but steadily completes, whether written by
// the handler or sent from a file (sendfile); one the client stops
// reading fails after WriteStall.
func TestSlowSteadyDownload(t *testing.T) {
	const stall = 150 * time.Millisecond
	const size = 8 << 20
	data := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	file := filepath.Join(t.TempDir(), "dump.zip")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	writeDone := make(chan time.Duration, 1)
	werr := make(chan error, 1)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		switch r.URL.Path {
		case "/file":
			http.ServeFile(w, r, file)
		case "/write":
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
			for b := data; len(b) > 0; b = b[32<<10:] {
				if _, err := w.Write(b[:32<<10]); err != nil {
					werr <- err
					return
				}
			}
		}
		writeDone <- time.Since(t0)
	}), Options{WriteStall: stall})
	for _, path := range []string{"/file", "/write"} {
		got := slowRead(t, addr, path, 64<<10, 20*time.Millisecond)
		if !bytes.Equal(got, data) {
			t.Fatalf("%s: %d bytes received, want %d", path, len(got), len(data))
		}
		took := <-writeDone
		t.Logf("%s: %d bytes written in %v (write stall %v)", path, size, took.Round(time.Millisecond), stall)
		if took < 3*stall {
			t.Fatalf("%s: the download took %v, not long enough to exercise WriteStall %v", path, took, stall)
		}
	}
	// A client that reads nothing: the handler's write fails.
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.(*net.TCPConn).SetReadBuffer(8 << 10)
	fmt.Fprintf(nc, "GET /write HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case err := <-werr:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("stalled download: %v, want a deadline error", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a download nobody reads is still being written after a minute")
	}
}

// TestRequestBody: a body arriving slowly but steadily is read whole; one
// that stops fails after ReadStall, one that trickles past ReadTimeout
// fails; a handler running longer than ReadStall keeps its context.
func TestRequestBody(t *testing.T) {
	const stall = 150 * time.Millisecond
	type result struct {
		n      int
		err    error
		ctxErr error
	}
	res := make(chan result, 1)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if r.URL.Path == "/linger" {
			time.Sleep(3 * stall)
		}
		res <- result{len(b), err, r.Context().Err()}
		io.WriteString(w, "ok")
	}), Options{ReadStall: stall, ReadTimeout: 20 * stall})
	send := func(path string, parts, missing int, pause time.Duration) result {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		fmt.Fprintf(nc, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", path, parts*10+missing)
		for range parts {
			if _, err := nc.Write([]byte("0123456789")); err != nil {
				break
			}
			time.Sleep(pause)
		}
		return <-res
	}
	// Steady: 12 parts a third of the stall apart (4 stalls in all).
	if r := send("/", 12, 0, stall/3); r.err != nil || r.n != 120 {
		t.Errorf("steady body: read %d bytes, %v; want 120", r.n, r.err)
	}
	// Stops after 2 parts: a deadline error after ReadStall.
	if r := send("/", 2, 10, 0); !errors.Is(r.err, os.ErrDeadlineExceeded) {
		t.Errorf("stalled body: %v, want a deadline error", r.err)
	}
	// Trickles, each part within the stall, past ReadTimeout.
	if r := send("/", 40, 0, stall*2/3); !errors.Is(r.err, os.ErrDeadlineExceeded) || r.n >= 400 {
		t.Errorf("trickled body: %d bytes, %v; want a deadline error before the end", r.n, r.err)
	}
	// A whole body, then a handler longer than the stall: its context
	// lives (no deadline left for net/http's background read).
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fmt.Fprintf(nc, "POST /linger HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
	if r := <-res; r.err != nil || r.n != 3 || r.ctxErr != nil {
		t.Errorf("lingering handler: %d bytes, %v, context %v", r.n, r.err, r.ctxErr)
	}
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("lingering handler's response: %v %v", resp, err)
	}
	// No body: no deadline either.
	got := make(chan struct{})
	go func() {
		defer close(got)
		if body, err := get(addr, "/linger"); err != nil || !strings.Contains(body, "ok") {
			t.Errorf("GET /linger: %q %v", body, err)
		}
	}()
	if r := <-res; r.ctxErr != nil {
		t.Errorf("GET handler longer than the stall: context %v", r.ctxErr)
	}
	// The handler answers after its result: wait for the answer, or the
	// server closes under it when the test ends (the CI flake).
	<-got
}
