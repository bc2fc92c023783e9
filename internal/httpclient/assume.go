package httpclient

import (
	"net"
	"net/netip"
	"strings"
)

// AssumeHTTPS returns arg as an https:// URL when a user typed a Source
// the way curl and wget take one, without its scheme ("example.org/rs",
// "localhost:8080/rs"), and ok true; otherwise arg unchanged and false.
//
// The rule, so that nothing that looks like a local path becomes a URL:
// arg has no "://"; it does not begin with "/", ".", "~" or a Windows
// drive ("C:"), and holds no backslash nor blank; and what stands before
// its first "/", "?" or "#" is a host - "localhost", an IP address, or a
// DNS name of at least two labels whose last is letters only - with an
// optional numeric port. "rs/collection", "mirror", "./example.org" and
// "C:/data" stay as typed. The caller prints what it took, so a guess is
// never silent. https, not http: a Source that offers only http answers
// with an error that says so, whereas a guess of http would send the
// request, credentials included, in clear.
func AssumeHTTPS(arg string) (string, bool) {
	if arg == "" || strings.Contains(arg, "://") || strings.ContainsAny(arg, "\\ \t\r\n") ||
		strings.ContainsAny(arg[:1], "/.~") {
		return arg, false
	}
	if len(arg) >= 2 && arg[1] == ':' && (arg[0]|0x20 >= 'a' && arg[0]|0x20 <= 'z') {
		return arg, false // C:/data, C:data
	}
	hostport := arg
	if i := strings.IndexAny(arg, "/?#"); i >= 0 {
		hostport = arg[:i]
	}
	host := hostport
	if strings.Contains(hostport, ":") {
		h, port, err := net.SplitHostPort(hostport)
		if err != nil || port == "" || strings.Trim(port, "0123456789") != "" || len(port) > 5 {
			return arg, false
		}
		host = h
	} else if strings.HasPrefix(hostport, "[") {
		return arg, false
	}
	if !isHostName(host) {
		return arg, false
	}
	return "https://" + arg, true
}

// isHostName: localhost, an IP address, or a DNS name of two labels or
// more whose last (the top-level domain) is letters.
func isHostName(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	labels := strings.Split(h, ".")
	if len(labels) < 2 || len(h) > 253 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	tld := labels[len(labels)-1]
	return len(tld) >= 2 && strings.Trim(strings.ToLower(tld), "abcdefghijklmnopqrstuvwxyz") == ""
}
