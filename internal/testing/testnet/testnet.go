// Package testnet gives tests HTTP clients that can only reach loopback.
//
// Code under test may dial out on its own (redirects, discovery, hub
// callbacks). A test must never send a packet anywhere but 127.0.0.0/8 or
// ::1, so every test client dials through Guard, which refuses any other
// address before a packet leaves and fails the test that owns it.
package testnet

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Guard is a dialer that refuses, and records, every address outside the
// loopback range.
type Guard struct {
	mu      sync.Mutex
	refused []string
	d       net.Dialer
}

// ErrNotLoopback is returned for a refused dial.
var ErrNotLoopback = fmt.Errorf("testnet: refused to dial a non-loopback address")

// DialContext dials addr only if it is a loopback IP address or localhost.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	// Names other than localhost are refused unresolved: resolving them
	// would itself send a packet to a DNS server.
	ip := net.ParseIP(host)
	if host == "localhost" {
		ip = net.IPv4(127, 0, 0, 1)
	}
	if ip == nil || !ip.IsLoopback() {
		g.refuse(addr)
		return nil, fmt.Errorf("%w: %s", ErrNotLoopback, addr)
	}
	return g.d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
}

func (g *Guard) refuse(addr string) {
	g.mu.Lock()
	g.refused = append(g.refused, addr)
	g.mu.Unlock()
}

// Refused returns the addresses refused so far.
func (g *Guard) Refused() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.refused...)
}

// Transport returns an http.Transport dialing through g.
func (g *Guard) Transport() *http.Transport {
	return &http.Transport{
		DialContext:         g.DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
		ForceAttemptHTTP2:   false,
	}
}

// Client returns an http.Client that dials only loopback addresses. When
// the test ends it fails if anything else was attempted, unless the test
// expected refusals and called Allow.
func Client(t testing.TB) (*http.Client, *Guard) {
	g := &Guard{}
	tr := g.Transport()
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		if r := g.Refused(); len(r) > 0 && !g.expected() {
			t.Errorf("testnet: code under test tried to dial non-loopback addresses: %v", r)
		}
	})
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}, g
}

var expectMu sync.Mutex
var expectSet = map[*Guard]bool{}

// ExpectRefusals marks refusals as the point of the test (for tests that
// check that code refuses to dial out): they no longer fail the test.
func (g *Guard) ExpectRefusals() {
	expectMu.Lock()
	expectSet[g] = true
	expectMu.Unlock()
}

func (g *Guard) expected() bool {
	expectMu.Lock()
	defer expectMu.Unlock()
	return expectSet[g]
}
