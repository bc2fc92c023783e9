package aggregate

import (
	"net"
	"net/http"
	"time"
)

// defaultTransport is one Source's transport: a few idle connections
// (the Source's runs are one at a time), the proxy from the environment.
func defaultTransport(workers int) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          2 * workers,
		MaxIdleConnsPerHost:   2 * workers,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: time.Minute,
		TLSHandshakeTimeout:   time.Minute,
		ExpectContinueTimeout: time.Second,
	}
}
