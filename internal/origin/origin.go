package origin

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// ErrOffOrigin is matched by every refusal.
var ErrOffOrigin = errors.New("leaves the Source's authority")

// Error is one refused URL.
type Error struct {
	URL string
	// Redirect is set when a redirect led to URL.
	Redirect bool
}

func (e *Error) Error() string {
	if e.Redirect {
		return "redirect to " + e.URL + " " + ErrOffOrigin.Error() + " (allow its host with --allow-host)"
	}
	return "location " + e.URL + " " + ErrOffOrigin.Error() + " (allow its host with --allow-host)"
}

func (e *Error) Is(target error) bool { return target == ErrOffOrigin }

// Permanent tells retry policies that retrying cannot help.
func (e *Error) Permanent() bool { return true }

// Policy is the set of authorities downloads may reach. A nil *Policy
// allows everything. It is safe for concurrent use.
type Policy struct {
	mu    sync.RWMutex
	auth  map[string]bool // "scheme://host:port", host lower-cased
	hosts map[string]bool // allowed hosts, any scheme: "host" (any port) or "host:port"
}

// New returns a Policy allowing the authority of source and the hosts in
// allow, each HOST (any port) or HOST:PORT (either scheme); IPv6
// addresses in brackets.
func New(source string, allow []string) (*Policy, error) {
	p := &Policy{auth: map[string]bool{}, hosts: map[string]bool{}}
	if err := p.Add(source); err != nil {
		return nil, err
	}
	for _, a := range allow {
		h := strings.ToLower(strings.TrimSpace(a))
		if h == "" || strings.ContainsAny(h, "/?#@ ") {
			return nil, fmt.Errorf("allowed host %q: want HOST or HOST:PORT", a)
		}
		if host, port, err := net.SplitHostPort(h); err == nil {
			if host == "" || port == "" {
				return nil, fmt.Errorf("allowed host %q: want HOST or HOST:PORT", a)
			}
			h = net.JoinHostPort(host, port)
		} else {
			h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		}
		p.hosts[h] = true
	}
	return p, nil
}

// Add allows the authority of the absolute URL u as well (a Source's
// base, when discovery found it elsewhere).
func (p *Policy) Add(u string) error {
	pu, err := url.Parse(u)
	if err != nil || pu.Host == "" {
		return fmt.Errorf("origin of %q: not an absolute URL", u)
	}
	p.mu.Lock()
	p.auth[authority(pu)] = true
	p.mu.Unlock()
	return nil
}

func authority(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// Allowed reports whether u may be fetched.
func (p *Policy) Allowed(u *url.URL) bool {
	if p == nil {
		return true
	}
	a := authority(u)
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.auth[a] {
		return true
	}
	hp := a[strings.Index(a, "://")+3:]
	host, _, _ := net.SplitHostPort(hp)
	return p.hosts[hp] || p.hosts[host]
}

// AllowedHost reports whether u's host (with any port, or its own port)
// is one the user allowed explicitly, whatever the Source's authorities:
// the hosts whose resources a mirror takes in besides the Source's own.
func (p *Policy) AllowedHost(u *url.URL) bool {
	if p == nil {
		return false
	}
	a := authority(u)
	hp := a[strings.Index(a, "://")+3:]
	host, _, _ := net.SplitHostPort(hp)
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.hosts[hp] || p.hosts[host]
}

// Check returns an *Error when the URL u may not be fetched.
func (p *Policy) Check(u string) error {
	if p == nil {
		return nil
	}
	pu, err := url.Parse(u)
	if err != nil || !p.Allowed(pu) {
		return &Error{URL: u}
	}
	return nil
}

// maxRedirects is net/http's own limit, kept when a policy replaces its
// default CheckRedirect.
const maxRedirects = 10

// Client returns a shallow copy of c (http.DefaultClient when nil) whose
// redirects are refused when they leave the policy; c's own CheckRedirect,
// if any, still runs for those that stay. A nil Policy returns c.
func (p *Policy) Client(c *http.Client) *http.Client {
	if c == nil {
		c = http.DefaultClient
	}
	if p == nil {
		return c
	}
	cc := *c
	prev := c.CheckRedirect
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !p.Allowed(req.URL) {
			return &Error{URL: req.URL.String(), Redirect: true}
		}
		if prev != nil {
			return prev(req, via)
		}
		if len(via) >= maxRedirects {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &cc
}
