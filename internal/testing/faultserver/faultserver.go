// Package faultserver wraps an http.Handler so that a share of its
// responses fail the ways real servers and networks fail: 500, 429 with
// Retry-After, a connection reset mid-body, a truncated body, wrong bytes,
// or a slow response. Tests use it on loopback to prove that clients retry,
// never install wrong bytes, and count failures.
package faultserver

import (
	"bytes"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// Fault is one way of failing a response.
type Fault int

// The faults. None passes the response through.
const (
	None Fault = iota
	Status500
	Status429
	Reset     // headers and half the body, then a TCP reset
	Truncated // full Content-Length announced, half the body, then close
	WrongBytes
	Slow
	numFaults
)

var names = [...]string{"none", "500", "429", "reset", "truncated", "wrong-bytes", "slow"}

func (f Fault) String() string { return names[f] }

// Handler injects faults into a share of the responses of Next.
type Handler struct {
	Next http.Handler
	// Share is the probability (0..1) that a request gets a fault.
	Share float64
	// Faults to choose from (all but None when empty).
	Faults []Fault
	// MaxPerPath caps the faults injected for one URL path, so that a
	// client that retries always succeeds in the end (default 2).
	MaxPerPath int
	// SlowDelay is the delay of a Slow response (default 200ms).
	SlowDelay time.Duration
	// Match, if set, limits faults to requests it returns true for.
	Match func(*http.Request) bool

	mu      sync.Mutex
	rng     *rand.Rand
	perPath map[string]int
	counts  [numFaults]int
}

// New returns a Handler with a deterministic choice of faults for seed.
func New(next http.Handler, share float64, seed uint64) *Handler {
	return &Handler{Next: next, Share: share, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Counts returns how many responses got each fault.
func (h *Handler) Counts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := map[string]int{}
	for f := Fault(1); f < numFaults; f++ {
		if h.counts[f] > 0 {
			m[f.String()] = h.counts[f]
		}
	}
	return m
}

// Injected returns the total number of faults injected.
func (h *Handler) Injected() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for f := Fault(1); f < numFaults; f++ {
		n += h.counts[f]
	}
	return n
}

func (h *Handler) pick(r *http.Request) Fault {
	if h.Match != nil && !h.Match(r) {
		return None
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rng == nil {
		h.rng = rand.New(rand.NewPCG(1, 2))
	}
	if h.perPath == nil {
		h.perPath = map[string]int{}
	}
	maxp := h.MaxPerPath
	if maxp == 0 {
		maxp = 2
	}
	if h.perPath[r.URL.Path] >= maxp || h.rng.Float64() >= h.Share {
		return None
	}
	fs := h.Faults
	if len(fs) == 0 {
		fs = []Fault{Status500, Status429, Reset, Truncated, WrongBytes, Slow}
	}
	f := fs[h.rng.IntN(len(fs))]
	h.perPath[r.URL.Path]++
	h.counts[f]++
	return f
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := h.pick(r)
	switch f {
	case None:
		h.Next.ServeHTTP(w, r)
		return
	case Status500:
		http.Error(w, "injected failure", http.StatusInternalServerError)
		return
	case Status429:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	case Slow:
		d := h.SlowDelay
		if d == 0 {
			d = 200 * time.Millisecond
		}
		time.Sleep(d)
		h.Next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	h.Next.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	if rec.Code != http.StatusOK || len(body) == 0 {
		w.WriteHeader(rec.Code)
		w.Write(body)
		return
	}
	switch f {
	case WrongBytes:
		b := bytes.Clone(body)
		b[len(b)/2] ^= 0xff
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		w.Write(b)
	case Truncated, Reset:
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic(http.ErrAbortHandler)
		}
		conn, _, err := hj.Hijack()
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		if tc, ok := conn.(*net.TCPConn); ok && f == Reset {
			tc.SetLinger(0) // close with RST
		}
		conn.Close()
	}
}
