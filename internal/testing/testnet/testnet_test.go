package testnet

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestGuard(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	c, g := Client(t)
	g.ExpectRefusals()
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, addr := range []string{"10.0.0.1:80", "192.168.1.1:443", "169.254.169.254:80", "8.8.8.8:53", "[fe80::1]:80", "example.com:80"} {
		if _, err := g.DialContext(context.Background(), "tcp", addr); !errors.Is(err, ErrNotLoopback) {
			t.Errorf("dial %s: %v, want ErrNotLoopback", addr, err)
		}
	}
	if n := len(g.Refused()); n != 6 {
		t.Errorf("recorded %d refusals, want 6", n)
	}
}
