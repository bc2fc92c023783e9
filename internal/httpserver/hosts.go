package httpserver

import (
	"net"
	"net/http"
	"strings"
)

// LoopbackHost reports whether host (a listen host or a Host header, with
// or without a port; an IPv6 literal with or without brackets) names this
// machine: a loopback address, localhost, or a name under .localhost
// (RFC 6761: never resolved elsewhere). Case and a trailing dot do not
// matter. "" and the unspecified addresses are not loopback.
func LoopbackHost(host string) bool {
	host = hostOnly(host)
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// hostOnly returns host without its port, brackets and trailing dot,
// lower-cased.
func hostOnly(host string) string {
	host = strings.ToLower(host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.TrimSuffix(host, ".")
}

// LoopbackHosts serves only requests whose Host names this machine
// (LoopbackHost) or one of also (host names or host:port, the port
// ignored; e.g. the host of the server's public base URL, which a reverse
// proxy passes on); others get 421 Misdirected Request. It defends a
// server listening on loopback against DNS rebinding: a web page whose
// own name the attacker then resolves to 127.0.0.1 is same-origin with
// itself, so Origin and Fetch Metadata cannot tell it from a local tool,
// but its requests carry its own name as Host.
func LoopbackHosts(h http.Handler, also ...string) http.Handler {
	allowed := map[string]bool{}
	for _, a := range also {
		if a = hostOnly(a); a != "" {
			allowed[a] = true
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !LoopbackHost(r.Host) && !allowed[hostOnly(r.Host)] {
			http.Error(w, "this server, on a loopback address, answers only to a Host that names this machine or its public URL (--base-url)", http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ListensOnLoopback reports whether ln accepts loopback connections only.
func ListensOnLoopback(ln net.Listener) bool {
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		return a.IP.IsLoopback()
	}
	return false
}
