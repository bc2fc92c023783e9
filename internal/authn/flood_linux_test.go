package authn

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Linux routes all of 127.0.0.0/8 to the loopback interface, so a test
// can be many clients: each dials from its own address.

// from returns a client whose connections come from 127.0.0.n and go
// nowhere but srv.
func from(t testing.TB, srv *httptest.Server, n int) *http.Client {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(n))}}
	addr := srv.Listener.Addr().String()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func do(c *http.Client, url string, set func(*http.Request)) (int, error) {
	req, _ := http.NewRequest("GET", url, nil)
	set(req)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestTokenFloodManyAddresses: wrong tokens from 127.0.0.2..21 (each
// client's budget spent, and many times the shared one) do not keep out a
// valid token, never used before, from 127.0.0.1: it gets 200 on its
// first try. The flooders themselves are refused unchecked (429).
func TestTokenFloodManyAddresses(t *testing.T) {
	tf := write(t, t.TempDir()+"/tokens", "the-valid-token\n")
	_, srv := newServer(t, Config{TokenFile: tf, Budget: stopped()})
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for n := 2; n <= 21; n++ {
		c := from(t, srv, n)
		wg.Go(func() {
			for i := range 15 {
				code, err := do(c, srv.URL, bearer(fmt.Sprint("guess-", n, "-", i)))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if codes[401] != 20*10 || codes[429] != 20*5 {
		t.Errorf("flood answered %v, want each of the 20 addresses 10 401s, then 429s", codes)
	}
	code, err := do(from(t, srv, 1), srv.URL, bearer("the-valid-token"))
	if err != nil || code != 200 {
		t.Fatalf("valid token after the flood, first try: %d %v, want 200", code, err)
	}
}
