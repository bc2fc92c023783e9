package httpserver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the zero Options.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = time.Minute
	DefaultReadStall         = 30 * time.Second
	DefaultWriteStall        = time.Minute
	// MinBodyRate is the slowest sane upload, in bytes per second, that
	// ReadTimeoutFor allows for a body of the largest accepted size.
	MinBodyRate = 16 << 10
)

// Options are a server's limits; a zero field takes its default.
type Options struct {
	ReadHeaderTimeout time.Duration // request headers, from the first byte (from accepting, for a connection's first request)
	IdleTimeout       time.Duration // a keep-alive connection without a request
	ReadStall         time.Duration // a request body without a byte
	ReadTimeout       time.Duration // a whole request body (0: only ReadStall bounds it)
	WriteStall        time.Duration // a response without a byte written
	// MaxConns caps the open connections (0: DefaultMaxConns()).
	MaxConns int
	// PublicHosts, when not nil, turns on the DNS-rebinding guard for a
	// server that listens on loopback: Serve then answers only requests
	// whose Host names this machine or one of these (LoopbackHosts).
	PublicHosts []string
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&o.IdleTimeout, DefaultIdleTimeout)
	def(&o.ReadStall, DefaultReadStall)
	def(&o.WriteStall, DefaultWriteStall)
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns()
	}
	return o
}

// ReadTimeoutFor is the ReadTimeout of a server taking bodies of up to
// maxBytes: the body at MinBodyRate, plus a minute.
func ReadTimeoutFor(maxBytes int64) time.Duration {
	return time.Minute + time.Duration(maxBytes/MinBodyRate)*time.Second
}

// Descriptors kept out of the connection cap: the stores, log files,
// outgoing requests (hub deliveries, pushes) and the files being served.
const (
	reservedFDs = 64
	fdsPerConn  = 2 // the socket and, for a download, the file it sends
	minConns    = 16
	maxConns    = 4096 // about 20 KB of buffers and stack each when idle
)

// DefaultMaxConns derives the connection cap from the descriptor limit:
// (RLIMIT_NOFILE - 64) / 2, between 16 and 4096; 1024 where the platform
// has no such limit.
func DefaultMaxConns() int {
	n, ok := fileLimit()
	if !ok {
		return 1024
	}
	return capFor(n)
}

func capFor(nofile uint64) int {
	if nofile < reservedFDs+fdsPerConn*minConns {
		return minConns
	}
	return int(min((nofile-reservedFDs)/fdsPerConn, maxConns))
}

// Server is an http.Server run under Options. Serve, Shutdown and Close
// are those of http.Server, Serve adding the connection cap.
type Server struct {
	HTTP *http.Server
	opts Options
	lim  *limiter
}

// New returns a Server for h.
func New(h http.Handler, o Options) *Server {
	o = o.withDefaults()
	l := &limiter{max: o.MaxConns, conns: map[*conn]struct{}{}, freed: make(chan struct{}, 1), writeStall: o.WriteStall}
	s := &Server{opts: o, lim: l}
	s.HTTP = &http.Server{
		Handler:           bodyTimer{h, o.ReadStall, o.ReadTimeout},
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		IdleTimeout:       o.IdleTimeout,
		ConnState:         l.connState,
	}
	return s
}

// Options returns the limits in force (defaults filled in).
func (s *Server) Options() Options { return s.opts }

// Serve accepts connections on ln, at most MaxConns at a time.
//
// With Options.PublicHosts set and ln on loopback, requests whose Host
// names neither this machine nor a public host get 421 (LoopbackHosts).
func (s *Server) Serve(ln net.Listener) error {
	if s.opts.PublicHosts != nil && ListensOnLoopback(ln) {
		s.HTTP.Handler = LoopbackHosts(s.HTTP.Handler, s.opts.PublicHosts...)
	}
	return s.HTTP.Serve(&listener{Listener: ln, l: s.lim, done: make(chan struct{})})
}

// Shutdown is http.Server.Shutdown.
func (s *Server) Shutdown(ctx context.Context) error { return s.HTTP.Shutdown(ctx) }

// Close is http.Server.Close.
func (s *Server) Close() error { return s.HTTP.Close() }

// Open is the number of connections open now.
func (s *Server) Open() int {
	s.lim.mu.Lock()
	defer s.lim.mu.Unlock()
	return s.lim.n
}

// Evicted is the number of connections closed so far to make room.
func (s *Server) Evicted() int64 { return s.lim.evicted.Load() }

// limiter counts the open connections and picks the one to close at the
// cap.
type limiter struct {
	max        int
	writeStall time.Duration
	evicted    atomic.Int64

	mu    sync.Mutex
	n     int // open connections
	conns map[*conn]struct{}
	freed chan struct{} // a connection closed or went idle
}

func (l *limiter) signal() {
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// full tells whether the cap is reached with every connection busy:
// a newcomer would find no connection to replace.
func (l *limiter) full() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n < l.max {
		return false
	}
	for c := range l.conns {
		if c.state == http.StateNew || c.state == http.StateIdle {
			return false
		}
	}
	return true
}

// room tells whether a connection may be added without passing the cap.
func (l *limiter) room() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n < l.max
}

func (l *limiter) release() {
	l.mu.Lock()
	l.n--
	l.mu.Unlock()
	l.signal()
}

// evictOne closes a connection without a request in progress, if any.
func (l *limiter) evictOne() bool {
	l.mu.Lock()
	// Idle keep-alive connections first, then those still to send (or
	// sending) their request headers, the longest waiting first.
	var victim *conn
	better := func(c *conn) bool {
		if victim == nil {
			return true
		}
		if (c.state == http.StateIdle) != (victim.state == http.StateIdle) {
			return c.state == http.StateIdle
		}
		return c.since.Before(victim.since)
	}
	for c := range l.conns {
		if (c.state == http.StateNew || c.state == http.StateIdle) && better(c) {
			victim = c
		}
	}
	if victim != nil {
		victim.state = http.StateClosed // not picked twice
	}
	l.mu.Unlock()
	if victim == nil {
		return false
	}
	l.evicted.Add(1)
	victim.Close()
	return true
}

func (l *limiter) connState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*conn)
	if !ok {
		return
	}
	l.mu.Lock()
	if c.state != http.StateClosed {
		c.state, c.since = st, time.Now()
	}
	l.mu.Unlock()
	if st == http.StateIdle {
		l.signal()
	}
}

type listener struct {
	net.Listener
	l         *limiter
	done      chan struct{}
	closeOnce sync.Once
}

// Accept waits while every slot is busy with a request, then accepts a
// connection and, past the cap, closes one without a request in progress
// (see evictOne). Eviction happens only when a newcomer has arrived, so
// that a connection accepted just before is not closed before it could
// send its request. When the connections turned busy in between, the
// newcomer is held, unserved, until a slot frees: its descriptor is the
// only one past the cap. Only net/http's Serve loop, one goroutine,
// calls Accept.
func (ln *listener) Accept() (net.Conn, error) {
	for ln.l.full() {
		select {
		case <-ln.l.freed:
		case <-ln.done:
			return nil, net.ErrClosed
		}
	}
	nc, err := ln.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for !ln.l.room() && !ln.l.evictOne() {
		select {
		case <-ln.l.freed:
		case <-ln.done:
			nc.Close()
			return nil, net.ErrClosed
		}
	}
	c := &conn{Conn: nc, l: ln.l, state: http.StateNew, since: time.Now(), lastQ: -1}
	ln.l.mu.Lock()
	ln.l.n++
	ln.l.conns[c] = struct{}{}
	ln.l.mu.Unlock()
	return c, nil
}

func (ln *listener) Close() error {
	ln.closeOnce.Do(func() { close(ln.done) })
	return ln.Listener.Close()
}

// conn frees its slot when closed and times its writes by progress.
type conn struct {
	net.Conn
	l         *limiter
	closeOnce sync.Once
	state     http.ConnState // under l.mu
	since     time.Time      // under l.mu
	lastQ     int            // bytes unacknowledged at the last write timeout (-1: unknown)
}

// progressed tells, after a write timed out having written m bytes,
// whether it made progress and may go on under a new deadline: bytes
// were written, or the client acknowledged some since the last timeout.
// The second matters for a large send buffer: the kernel lets a writer
// go on only when a good part of it (a third or more) has drained, which
// at a slow client's rate can take longer than WriteStall. Where the
// unacknowledged count is not known, a stall is thus detected within
// WriteStall of the last write; with it, within twice WriteStall of the
// client's last acknowledgement.
func (c *conn) progressed(m int64, err error) bool {
	if err == nil {
		c.lastQ = -1 // what it was is stale once the buffer refills
		return false
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	q := unacked(c.Conn)
	ok := m > 0 || c.lastQ < 0 && q >= 0 || q < c.lastQ
	c.lastQ = q
	return ok
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		c.l.release()
	})
	return err
}

// Write fails when the client takes no byte for WriteStall: a write that
// timed out having made progress goes on under a new deadline.
func (c *conn) Write(b []byte) (int, error) {
	n := 0
	for {
		c.Conn.SetWriteDeadline(time.Now().Add(c.l.writeStall))
		m, err := c.Conn.Write(b[n:])
		n += m
		if c.progressed(int64(m), err) {
			continue
		}
		return n, err
	}
}

// ReadFrom keeps the kernel's sendfile for files (http.ServeContent):
// the kernel moves the file's offset by what was sent, so a call that
// timed out after sending some bytes goes on where it stopped. Other
// readers are copied through Write.
func (c *conn) ReadFrom(r io.Reader) (int64, error) {
	rf, ok := c.Conn.(io.ReaderFrom)
	src := r
	if lr, isLR := r.(*io.LimitedReader); isLR {
		src = lr.R
	}
	if _, isFile := src.(*os.File); !ok || !isFile {
		return io.Copy(writerOnly{c}, r)
	}
	var n int64
	for {
		c.Conn.SetWriteDeadline(time.Now().Add(c.l.writeStall))
		m, err := rf.ReadFrom(r)
		n += m
		if c.progressed(m, err) {
			continue
		}
		return n, err
	}
}

// writerOnly hides conn's ReadFrom from io.Copy.
type writerOnly struct{ io.Writer }

// bodyTimer times request bodies by progress: each read of the body may
// wait ReadStall for its next byte, and the whole body ends within
// ReadTimeout of the handler's start when that is set.
type bodyTimer struct {
	h                  http.Handler
	stall, readTimeout time.Duration
}

func (b bodyTimer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A request without a body gets no read deadline: net/http's
	// background read, which watches for the client going away during
	// the handler, would take its expiry for a disconnection and cancel
	// the request's context.
	if r.Body == nil || r.Body == http.NoBody {
		b.h.ServeHTTP(w, r)
		return
	}
	rc := http.NewResponseController(w)
	tb := &timedBody{ReadCloser: r.Body, rc: rc, stall: b.stall}
	if b.readTimeout > 0 {
		tb.end = time.Now().Add(b.readTimeout)
	}
	// Also a body the handler never reads: what net/http discards of it
	// after the handler is timed.
	if tb.arm() != nil {
		b.h.ServeHTTP(w, r)
		return
	}
	r.Body = tb
	b.h.ServeHTTP(w, r)
}

type timedBody struct {
	io.ReadCloser
	rc    *http.ResponseController
	stall time.Duration
	end   time.Time
	eof   bool
}

func (t *timedBody) arm() error {
	d := time.Now().Add(t.stall)
	if !t.end.IsZero() && t.end.Before(d) {
		d = t.end
	}
	return t.rc.SetReadDeadline(d)
}

func (t *timedBody) Read(p []byte) (int, error) {
	if t.eof {
		return t.ReadCloser.Read(p)
	}
	t.arm()
	n, err := t.ReadCloser.Read(p)
	if err == io.EOF {
		// The background read starts now: no deadline for it (see
		// ServeHTTP).
		t.eof = true
		t.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
