package authn

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Budget bounds the credential checks that may fail. Each client address
// has its own budget (10 at once, then one a second) so that one guesser
// cannot lock everyone out by spending a shared one; all clients
// together have a larger one (100, then 20 a second), which bounds a
// guesser with many addresses. Behind a proxy every client is the
// proxy's address (X-Forwarded-For is not trusted).
type Budget struct {
	clients clientBuckets
	all     tokenBucket
	now     func() time.Time // tests stop the clock
}

// NewBudget returns a full Budget.
func NewBudget() *Budget {
	return &Budget{clients: clientBuckets{m: map[string]*tokenBucket{}}, all: tokenBucket{rate: 20, burst: 100}, now: time.Now}
}

// Take takes a token for one check from client's budget and the shared
// one; ok false: refuse the check unchecked. Taking it before the check
// matters: checking only after a failure let any number of guesses sent
// at once be compared. give gives the tokens back (call it when the check
// succeeded).
func (b *Budget) Take(client string) (give func(), ok bool) {
	now := b.now()
	c := b.clients.get(client, now)
	if !c.take(now) {
		return nil, false
	}
	if !b.all.take(now) {
		c.give()
		return nil, false
	}
	return func() { c.give(); b.all.give() }, true
}

// Client is the address a Budget knows a request's client by: the
// remote IP address, without the port.
func Client(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// tokenBucket: burst tokens, rate more a second. Unlike a rate.Limiter's
// reservations, a token taken can be given back whole (cancelled
// reservations interleaved by concurrent requests lose tokens: 100
// guesses at once locked the hub's admin out for about 90 s).
type tokenBucket struct {
	rate, burst float64

	mu     sync.Mutex
	tokens float64
	at     time.Time // of tokens; zero: full
}

// take takes a token if there is one.
func (b *tokenBucket) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.at.IsZero() {
		b.tokens, b.at = b.burst, now
	} else if now.After(b.at) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.at).Seconds()*b.rate)
		b.at = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// give gives back a token taken.
func (b *tokenBucket) give() {
	b.mu.Lock()
	b.tokens = min(b.burst, b.tokens+1)
	b.mu.Unlock()
}

// full reports whether the bucket has refilled (forgetting it loses
// nothing).
func (b *tokenBucket) full(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.at.IsZero() || b.tokens+now.Sub(b.at).Seconds()*b.rate >= b.burst
}

// clientBuckets holds a tokenBucket per client address, at most
// maxClientBuckets (full ones are forgotten first; then, under a flood of
// addresses, all: the shared bucket still bounds them).
type clientBuckets struct {
	mu sync.Mutex
	m  map[string]*tokenBucket
}

const maxClientBuckets = 10000

func (c *clientBuckets) get(client string, now time.Time) *tokenBucket {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.m[client]; ok {
		return b
	}
	if len(c.m) >= maxClientBuckets {
		for k, b := range c.m {
			if b.full(now) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxClientBuckets {
			clear(c.m)
		}
	}
	b := &tokenBucket{rate: 1, burst: 10}
	c.m[client] = b
	return b
}
