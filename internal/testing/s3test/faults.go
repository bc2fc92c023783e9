package s3test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Fault is one way the path between a client and the bucket fails. The
// faults are S3's own (internal/testing/faultserver's are HTTP's): an S3
// error body, a reset after the server committed, an ETag rewritten.
type Fault int

// The faults.
const (
	Pass Fault = iota
	// SlowDown answers 503 with S3's SlowDown error body; the request does
	// not reach the server.
	SlowDown
	// Internal answers 500 InternalError; the request does not reach the
	// server.
	Internal
	// ResetBefore resets the connection before the request reaches the
	// server.
	ResetBefore
	// ResetAfter lets the server do the request, then resets the
	// connection before its response: the client cannot tell a write that
	// was done from one that was not.
	ResetAfter
	// Truncated passes half of the response body (Content-Length whole),
	// then closes the connection.
	Truncated
	// WrongETag replaces the response's ETag header.
	WrongETag
	// CorruptBody flips one byte of the request body on its way to the
	// server, whose digest checks must refuse it.
	CorruptBody
	numFaults
)

var faultNames = [...]string{"pass", "slowdown", "internal", "reset-before", "reset-after", "truncated", "wrong-etag", "corrupt-body"}

func (f Fault) String() string {
	if f < 0 || f >= numFaults {
		return "fault(" + strconv.Itoa(int(f)) + ")"
	}
	return faultNames[f]
}

// BadETag is the ETag WrongETag puts in a response.
const BadETag = `"00000000000000000000000000000bad"`

// Rule injects Fault into requests that match it, Times times (0: every
// time).
type Rule struct {
	// Method matches the request's method ("" any).
	Method string
	// Query, when not "", must be a query parameter of the request
	// ("uploadId", "partNumber", "uploads", "list-type").
	Query string
	// NoQuery, when not "", must not be one.
	NoQuery string
	// KeySuffix, when not "", must end the request's path.
	KeySuffix string
	Fault     Fault
	Times     int
}

func (r *Rule) match(req *http.Request) bool {
	q := req.URL.Query()
	return (r.Method == "" || r.Method == req.Method) &&
		(r.Query == "" || q.Has(r.Query)) &&
		(r.NoQuery == "" || !q.Has(r.NoQuery)) &&
		(r.KeySuffix == "" || strings.HasSuffix(req.URL.Path, r.KeySuffix))
}

// Proxy is a fault proxy on loopback in front of a Server.
type Proxy struct {
	// Endpoint is the proxy's base URL: use it in place of the server's.
	Endpoint string

	upstream string
	tr       *http.Transport
	srv      *http.Server

	mu       sync.Mutex
	rules    []Rule
	used     []int
	injected map[Fault]int
	requests map[string]int // "METHOD" -> requests seen
}

// FaultProxy starts a proxy in front of s that applies rules, first match
// first; it stops when t ends.
func (s *Server) FaultProxy(t testing.TB, rules ...Rule) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{
		Endpoint: "http://" + l.Addr().String(),
		upstream: s.Endpoint,
		tr:       &http.Transport{MaxIdleConnsPerHost: 64},
		injected: map[Fault]int{},
		requests: map[string]int{},
	}
	p.SetRules(rules...)
	p.srv = &http.Server{Handler: p}
	go p.srv.Serve(l)
	t.Cleanup(func() {
		p.srv.Close()
		p.tr.CloseIdleConnections()
	})
	return p
}

// SetRules replaces the rules (and their counts).
func (p *Proxy) SetRules(rules ...Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = rules
	p.used = make([]int, len(rules))
}

// Injected returns how many times f was injected.
func (p *Proxy) Injected(f Fault) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.injected[f]
}

// Requests returns how many requests of method the proxy saw.
func (p *Proxy) Requests(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests[method]
}

func (p *Proxy) pick(r *http.Request) Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests[r.Method]++
	for i := range p.rules {
		ru := &p.rules[i]
		if ru.match(r) && (ru.Times == 0 || p.used[i] < ru.Times) {
			p.used[i]++
			if ru.Fault != Pass {
				p.injected[ru.Fault]++
			}
			return ru.Fault
		}
	}
	return Pass
}

func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>fault</RequestId></Error>`, code, msg)
}

// reset closes the client's connection with a TCP reset.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := p.pick(r)
	switch f {
	case SlowDown:
		io.Copy(io.Discard, r.Body)
		s3Error(w, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
		return
	case Internal:
		io.Copy(io.Discard, r.Body)
		s3Error(w, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
		return
	case ResetBefore:
		reset(w)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if f == CorruptBody && len(body) > 0 {
		body[len(body)/2] ^= 0xff
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	out.Header = r.Header.Clone()
	out.Header.Del("Expect")
	out.Host = r.Host // the signature covers the host the client named
	out.ContentLength = int64(len(body))
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	rb, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if f == ResetAfter {
		reset(w)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	if f == WrongETag && w.Header().Get("ETag") != "" {
		w.Header().Set("ETag", BadETag)
	}
	if f == WrongETag && bytes.Contains(rb, []byte("<ETag>")) {
		// CompleteMultipartUpload answers its ETag in the body.
		i := bytes.Index(rb, []byte("<ETag>"))
		j := bytes.Index(rb[i:], []byte("</ETag>"))
		if j > 0 {
			rb = append(append(append([]byte{}, rb[:i]...), []byte("<ETag>&quot;00000000000000000000000000000bad&quot;")...), rb[i+j:]...)
			w.Header().Set("Content-Length", strconv.Itoa(len(rb)))
		}
	}
	if f == Truncated && len(rb) > 1 {
		w.Header().Set("Content-Length", strconv.Itoa(len(rb)))
		w.WriteHeader(resp.StatusCode)
		w.Write(rb[:len(rb)/2])
		w.(http.Flusher).Flush()
		reset(w)
		return
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(rb)
}
