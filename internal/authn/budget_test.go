package authn

import (
	"fmt"
	"net/http/httptest"
	"testing"
)

// TestClient: a client is its IPv4 address, or the /64 of its IPv6 one;
// an IPv4-mapped IPv6 address is the IPv4 client.
func TestClient(t *testing.T) {
	for _, tc := range []struct{ remote, want string }{
		{"192.0.2.7:5555", "192.0.2.7"},
		{"[2001:db8:1:2:aaaa::1]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:bbbb:cccc:dddd:eeee]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:3::1]:443", "2001:db8:1:3::/64"},
		{"[::ffff:192.0.2.7]:80", "192.0.2.7"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"[::1]:80", "::/64"},
		{"not an address", "not an address"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		if got := Client(r); got != tc.want {
			t.Errorf("Client(%s) = %q, want %q", tc.remote, got, tc.want)
		}
	}
}

// TestBudgetBounded: a flood of many more addresses than the table holds
// keeps it at its size, the least recently used forgotten; a client in
// use stays known (its spent budget is not renewed by the flood).
func TestBudgetBounded(t *testing.T) {
	b := stopped()
	b.clients.max = 100
	for range 10 {
		if _, ok := b.TakeClient("victim-guesser"); !ok {
			t.Fatal("first 10 refused")
		}
	}
	for i := range 1000 {
		b.TakeClient(fmt.Sprint("10.0.", i/256, ".", i%256))
		if i%50 == 0 {
			if _, ok := b.TakeClient("victim-guesser"); ok {
				t.Fatalf("a guesser's spent budget renewed after %d other addresses", i)
			}
		}
	}
	if n := b.clients.len(); n != 100 {
		t.Errorf("%d clients remembered, want the bound 100", n)
	}
}
