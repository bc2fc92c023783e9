package hub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// ErrForbiddenAddress is returned for a callback or topic whose host is,
// or resolves to, an address the hub may not reach.
var ErrForbiddenAddress = errors.New("address not allowed (loopback, private, link-local or reserved)")

var blockedPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
		"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23",
		"2001:db8::/32", "2002::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// blocked reports whether a is an address callbacks may not reach.
func blocked(a netip.Addr) bool {
	a = a.Unmap() // IPv4-mapped IPv6 is checked as IPv4
	if !a.IsValid() || a.IsUnspecified() || a.IsLoopback() || a.IsPrivate() ||
		a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsMulticast() {
		return true
	}
	for _, p := range blockedPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ambiguousHost reports host names that some resolvers read as IPv4
// addresses in other spellings (2130706433, 0x7f000001, 0177.0.0.1):
// no real name ends in a numeric label, so they are refused outright.
func ambiguousHost(host string) bool {
	h := strings.TrimSuffix(host, ".")
	last := h[strings.LastIndexByte(h, '.')+1:]
	if last == "" {
		return true
	}
	if strings.HasPrefix(strings.ToLower(last), "0x") {
		return true
	}
	for _, c := range last {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (h *Hub) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{a}, nil
	}
	if ambiguousHost(host) {
		return nil, fmt.Errorf("%q looks like an IP address in an unusual spelling", host)
	}
	var ips []net.IP
	var err error
	if h.cfg.LookupIP != nil {
		ips, err = h.cfg.LookupIP(ctx, host)
	} else {
		ips, err = net.DefaultResolver.LookupIP(ctx, "ip", host)
	}
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no address", host)
	}
	return out, nil
}

// checkHost resolves host and refuses it if any of its addresses is
// blocked (before anything is dialled).
func (h *Hub) checkHost(ctx context.Context, host string) error {
	addrs, err := h.lookup(ctx, host)
	if err != nil {
		return err
	}
	if h.cfg.AllowPrivateCallbacks {
		return nil
	}
	for _, a := range addrs {
		if blocked(a) {
			return fmt.Errorf("%w: %s is %s", ErrForbiddenAddress, host, a)
		}
	}
	return nil
}

// dialContext resolves addr, refuses blocked addresses, and dials the
// first one that answers; control checks again on the dialled address.
func (h *Hub) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := h.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: h.cfg.ConnectTimeout, Control: h.control}
	var first error
	for _, a := range addrs {
		if !h.cfg.AllowPrivateCallbacks && blocked(a) {
			h.m.refused.Inc()
			if first == nil {
				first = fmt.Errorf("%w: %s is %s", ErrForbiddenAddress, host, a)
			}
			continue
		}
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// control runs on the address about to be connected to, after every
// resolution: the last line of the request-forgery guard.
func (h *Hub) control(network, address string, c syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("hub: unparsable dial address %q", address)
	}
	if !h.cfg.AllowPrivateCallbacks && blocked(ap.Addr()) {
		h.m.refused.Inc()
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, address)
	}
	if h.cfg.DialControl != nil {
		return h.cfg.DialControl(network, address, c)
	}
	return nil
}
