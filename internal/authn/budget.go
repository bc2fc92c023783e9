package authn

import (
	"container/list"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Budget bounds the credential checks that may fail. Each client (see
// Client) has its own budget (10 at once, then one a second) so that one
// guesser cannot lock everyone out by spending a shared one; all clients
// together have a larger one (100, then 20 a second), which bounds the
// cost a guesser with many addresses can cause. Behind a proxy every
// client is the proxy's address (X-Forwarded-For is not trusted).
type Budget struct {
	clients clientBuckets
	all     tokenBucket
	now     func() time.Time // tests stop the clock
}

// NewBudget returns a full Budget.
func NewBudget() *Budget {
	return &Budget{clients: clientBuckets{m: map[string]*list.Element{}, max: maxClientBuckets}, all: tokenBucket{rate: 20, burst: 100}, now: time.Now}
}

// TakeClient is Take from client's own budget alone, for a check that
// costs nothing worth bounding (a token compared as a digest): the shared
// budget bounds cost, and spent by guessers on other addresses it would
// refuse a valid credential on its first try. A guesser is still bounded
// by its own budget; one with many addresses gets each address's (an
// IPv6 client counts by its /64), which a token of 128 random bits makes
// useless.
func (b *Budget) TakeClient(client string) (give func(), ok bool) {
	now := b.now()
	c := b.clients.get(client, now)
	if !c.take(now) {
		return nil, false
	}
	return c.give, true
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
// remote IPv4 address, or the /64 of an IPv6 one (a single host is
// commonly given a whole /64, so its addresses are one client).
func Client(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		h = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(h)
	if err != nil {
		return h
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
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

// clientBuckets holds a tokenBucket per client, at most max, the least
// recently used forgotten first: memory stays bounded under a flood of
// addresses. A forgotten client starts again with a full budget: Take's
// shared budget still bounds it, TakeClient's nothing (a guesser cycling
// through more than max addresses, or IPv6 /64s, is not bounded at all).
type clientBuckets struct {
	mu  sync.Mutex
	m   map[string]*list.Element // of lru, Value a *clientBucket
	lru list.List                // most recently used first
	max int
}

type clientBucket struct {
	client string
	tokenBucket
}

const maxClientBuckets = 10000

func (c *clientBuckets) get(client string, now time.Time) *tokenBucket {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[client]; ok {
		c.lru.MoveToFront(e)
		return &e.Value.(*clientBucket).tokenBucket
	}
	for len(c.m) >= c.max {
		e := c.lru.Back()
		c.lru.Remove(e)
		delete(c.m, e.Value.(*clientBucket).client)
	}
	b := &clientBucket{client: client, tokenBucket: tokenBucket{rate: 1, burst: 10}}
	c.m[client] = c.lru.PushFront(b)
	return &b.tokenBucket
}

func (c *clientBuckets) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
