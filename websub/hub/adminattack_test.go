package hub

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// TestAdminLoginLimiterConcurrent: failed logins sent all at once are
// limited as much as sent one after the other (the limiter is consulted
// before the token is compared, not only after a failure).
func TestAdminLoginLimiterConcurrent(t *testing.T) {
	h, _ := openHub(t)
	admin := h.Admin(AdminOptions{Token: adminToken, FailedLoginDelay: 200 * time.Millisecond})
	var mu sync.Mutex
	codes := map[int]int{}
	// The bodies arrive together, after every request's headers (as an
	// attacker holding 100 connections can arrange).
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := adminReq(http.MethodPost, "/admin/login", url.Values{"token": {"guess"}}, nil)
			r.Body = io.NopCloser(&slowBody{release: release, r: strings.NewReader("token=guess")})
			c := serve(admin, r).Code
			mu.Lock()
			codes[c]++
			mu.Unlock()
		}()
	}
	time.Sleep(200 * time.Millisecond)
	close(release)
	wg.Wait()
	if codes[http.StatusUnauthorized] > 11 {
		t.Errorf("100 concurrent failed logins: %v (the token compared more than the burst)", codes)
	}
	// A right token is still accepted once the failures are over.
	time.Sleep(1100 * time.Millisecond)
	login(t, admin)
}

// TestAdminBearerGuessesLimited: guessing the token as a bearer token is
// limited as the login form is (otherwise the form's limiter is moot).
func TestAdminBearerGuessesLimited(t *testing.T) {
	h, _ := openHub(t)
	admin := h.Admin(AdminOptions{Token: adminToken, FailedLoginDelay: time.Millisecond})
	codes := map[int]int{}
	for range 30 {
		r := adminReq(http.MethodGet, "/admin/stats", nil, nil)
		r.Header.Set("Authorization", "Bearer guess")
		codes[serve(admin, r).Code]++
	}
	if codes[http.StatusUnauthorized] > 11 || codes[http.StatusTooManyRequests] == 0 {
		t.Errorf("30 quick wrong bearer tokens: %v", codes)
	}
}

type slowBody struct {
	release chan struct{}
	r       io.Reader
}

func (b *slowBody) Read(p []byte) (int, error) {
	<-b.release
	return b.r.Read(p)
}

// TestDeliveryErrorBounded: a callback answering with a status line of
// megabytes does not make a last error of megabytes (kept in the store
// with every failed attempt and every dead letter, shown 200 to an admin
// page).
func TestDeliveryErrorBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				bufio.NewReader(c).ReadString('\n')
				fmt.Fprintf(c, "HTTP/1.1 500 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", strings.Repeat("é", 2<<20))
			}()
		}
	}()
	h, _ := openHub(t)
	r := h.deliver(context.Background(), &hubstore.Subscription{Topic: topicA, Callback: "http://" + ln.Addr().String() + "/cb"},
		newOutEntry(topicA, &hubstore.Entry{Seq: 1, ContentType: "application/xml", Body: []byte("<x/>")}), 1, nil)
	if r.ok || r.status != 500 || len(r.err) > 1024 || !utf8.ValidString(r.err) || !strings.HasPrefix(r.err, "callback answered 500 éé") {
		t.Errorf("ok %v, status %d, error of %d bytes (valid UTF-8 %v): %.60q", r.ok, r.status, len(r.err), utf8.ValidString(r.err), r.err)
	}
}

// TestAdminSessionCookieTossed: a cookie of the session's name set by
// another page of the site (sent first: a longer path) does not hide the
// admin's session.
func TestAdminSessionCookieTossed(t *testing.T) {
	h, _ := openHub(t)
	admin := h.Admin(AdminOptions{Token: adminToken})
	c, _ := login(t, admin)
	r := adminReq(http.MethodGet, "/admin/dead-letters", nil, &http.Cookie{Name: c.Name, Value: "tossed"})
	r.AddCookie(c)
	if rec := serve(admin, r); rec.Code != 200 {
		t.Errorf("with a tossed cookie first: %d", rec.Code)
	}
}

// TestAdminGuesserDoesNotLockOutOthers: the failed-login budget is per
// client address, so one guesser spending its budget (one wrong token a
// second keeps it empty) leaves the admin at another address able to log
// in; so do guessers on many addresses (each bounded by its own budget):
// the right token, never used before, gets in on its first try.
func TestAdminGuesserDoesNotLockOutOthers(t *testing.T) {
	h, _ := openHub(t)
	admin := h.Admin(AdminOptions{Token: adminToken, FailedLoginDelay: time.Millisecond})
	get := func(addr, tok string) int {
		r := adminReq(http.MethodGet, "/admin/stats", nil, nil)
		r.RemoteAddr = addr
		r.Header.Set("Authorization", "Bearer "+tok)
		return serve(admin, r).Code
	}
	for range 30 {
		get("192.0.2.7:4000", "guess")
	}
	if c := get("192.0.2.7:4001", "guess"); c != http.StatusTooManyRequests {
		t.Fatalf("the guesser's next guess: %d, want 429", c)
	}
	if c := get("198.51.100.1:5000", adminToken); c != http.StatusOK {
		t.Fatalf("the admin at another address: %d, want 200", c)
	}
	limited := 0
	for i := range 250 { // many addresses, each its budget and more
		for range 12 {
			if get(fmt.Sprintf("203.0.113.%d:1", i), "guess") == http.StatusTooManyRequests {
				limited++
			}
		}
	}
	if limited == 0 {
		t.Error("12 guesses from each of 250 addresses: none limited by their addresses' budgets")
	}
	if c := get("198.51.100.2:5000", adminToken); c != http.StatusOK {
		t.Fatalf("the admin at a new address after guesses from 250 addresses: %d, want 200", c)
	}
}
