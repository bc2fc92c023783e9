package authn

import (
	"context"
	"fmt"
	"golang.org/x/crypto/bcrypt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
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

// TestPasswordFloodFairness: 9 addresses queue 10 wrong passwords each
// (each address's budget, most of the shared one) behind one bcrypt slot;
// a new client's right password, never checked before, is then checked
// after at most one flood request of each flooding address, not after
// all of them (first come, first served: about 90 bcrypt runs, 4.3 s at
// the default cost). Counted in bcrypt runs, not in seconds.
func TestPasswordFloodFairness(t *testing.T) {
	h, err := bcrypt.GenerateFromPassword([]byte("right"), 8)
	if err != nil {
		t.Fatal(err)
	}
	bf := write(t, t.TempDir()+"/htpasswd", "alice:"+string(h)+"\n")
	a, srv := newServer(t, Config{BasicFile: bf, MaxBcrypt: 1, Budget: stopped()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	const flooders, each = 9, 10
	for n := 2; n < 2+flooders; n++ {
		c := from(t, srv, n)
		for i := range each {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
				req.SetBasicAuth("alice", fmt.Sprint("guess-", n, "-", i))
				if resp, err := c.Do(req); err == nil {
					resp.Body.Close()
				}
			})
		}
	}
	for deadline := time.Now().Add(20 * time.Second); a.waiting.Load() < flooders*each/2; {
		if time.Now().After(deadline) {
			t.Fatalf("the flood did not queue: %d waiting", a.waiting.Load())
		}
		time.Sleep(time.Millisecond)
	}
	before, t0 := a.bcrypts.Load(), time.Now()
	code, err := do(from(t, srv, 1), srv.URL, basic("alice", "right"))
	took, runs := time.Since(t0), a.bcrypts.Load()-before
	if err != nil || code != 200 {
		t.Fatalf("the right password under the flood: %d %v", code, err)
	}
	t.Logf("the right password under a flood of %d queued: %d bcrypt runs (its own included), %v", flooders*each, runs, took.Round(time.Millisecond))
	if runs > flooders+3 {
		t.Errorf("%d bcrypt runs before the new client's own was done, want at most %d: one a flooding address, the one in progress, one that may end while the request travels, its own", runs, flooders+3)
	}
}
