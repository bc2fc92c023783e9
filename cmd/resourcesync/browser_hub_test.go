package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/resourcesync-go/resourcesync/internal/testing/browsertest"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// hubSubscriber is a loopback WebSub subscriber: it confirms every
// verification; /bad answers deliveries 500 while failing, /slow holds
// them until released, the others take them.
type hubSubscriber struct {
	srv     *httptest.Server
	failing atomic.Bool
	release chan struct{}
	mu      sync.Mutex
	got     map[string][]string // path → bodies delivered
}

func newHubSubscriber(t *testing.T) *hubSubscriber {
	s := &hubSubscriber{release: make(chan struct{}), got: map[string][]string{}}
	s.failing.Store(true)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, r.URL.Query().Get("hub.challenge"))
			return
		}
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/bad":
			if s.failing.Load() {
				http.Error(w, "subscriber down", http.StatusInternalServerError)
				return
			}
		case "/slow":
			select {
			case <-s.release:
			case <-r.Context().Done():
				return
			}
		}
		s.mu.Lock()
		s.got[r.URL.Path] = append(s.got[r.URL.Path], string(b))
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() { close(s.release) })
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

func (s *hubSubscriber) bodies(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got[path]...)
}

// TestBrowserHubAdmin runs the hub command with --admin-token, makes
// three real subscriptions (one healthy, one failing into dead letters,
// one slow with a backlog), then logs in from a browser with the
// keyboard, checks the subscriptions page against the hub's JSON,
// replays a dead letter with a button and sees it delivered.
func TestBrowserHubAdmin(t *testing.T) {
	b := browsertest.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base := "http://" + addr
	const token = "correct horse battery staple"
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"resourcesync", "hub", "--addr", addr, "--state", t.TempDir(),
			"--allow-private-callbacks", "--admin-token", token, "--give-up-after", "1s"}, &out, &errb)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("hub did not shut down")
		}
	})
	client, _ := testnet.Client(t)
	waitHub(t, client, base)

	api := func(path string, v any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	type subJSON struct {
		Total         int `json:"total"`
		Subscriptions []struct {
			Callback              string
			Cursor, Head, Backlog uint64
			Failures              int
		} `json:"subscriptions"`
	}
	var stats struct{ Subscriptions, DeadLetters, PendingVerifications int }
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (stderr: %s)", what, errb.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	sub := newHubSubscriber(t)
	topic := "http://127.0.0.1:1/changes.xml" // never fetched: the publishes are fat pings
	for _, p := range []string{"/good", "/bad", "/slow"} {
		resp, err := client.PostForm(base+"/", url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic}, "hub.callback": {sub.srv.URL + p}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("subscribe %s: %s", p, resp.Status)
		}
	}
	waitUntil("3 verified subscriptions", func() bool { api("/admin/stats", &stats); return stats.Subscriptions == 3 })
	for i := 1; i <= 3; i++ {
		req, _ := http.NewRequest(http.MethodPost, base+"/", strings.NewReader(fmt.Sprintf("<urlset><n>%d</n></urlset>", i)))
		req.Header.Set("Content-Type", "application/xml")
		req.Header.Add("Link", "<"+topic+`>; rel="self"`)
		req.Header.Add("Link", "<"+base+`/>; rel="hub"`)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("publish: %s", resp.Status)
		}
	}
	waitUntil("3 dead letters and 3 deliveries", func() bool {
		api("/admin/stats", &stats)
		return stats.DeadLetters == 3 && len(sub.bodies("/good")) == 3
	})
	var want subJSON
	api("/admin/subscriptions", &want)

	// Log in with the keyboard: the page asked for sends to the form.
	b.Navigate(t, base+"/admin/subscriptions")
	if loc := b.Location(t); loc != base+"/admin/" {
		t.Fatalf("not sent to the login form: %s", loc)
	}
	if l := b.Text(t, `label[for="token"]`); l != "Admin token" {
		t.Errorf("label %q", l)
	}
	b.Phone(t)
	b.Screenshot(t, "hub-login-phone")
	b.Desktop(t)
	b.Key(t, "#token", token)
	b.Key(t, "#token", "\r")
	b.Do(t, chromedp.WaitVisible(chromedp.CSS(`form[action="logout"] button`)))
	if cards := b.Texts(t, ".card b"); strings.Join(cards, " ") != "3 0 3 1" {
		t.Errorf("overview cards (subscriptions, pending, dead letters, nodes): %q", cards)
	}
	b.Screenshot(t, "hub-overview")
	if got := browsertest.Eval[bool](t, b, `document.cookie === ""`); !got {
		t.Error("the session cookie is readable by script (not HttpOnly)")
	}

	// Subscriptions: the figures are the hub's.
	b.Click(t, `main nav a[href="subscriptions"]`)
	rows := browsertest.Eval[[][]string](t, b, `Array.from(document.querySelectorAll("tbody tr"), tr => Array.from(tr.cells, c => c.textContent.trim()))`)
	if len(rows) != 3 || want.Total != 3 {
		t.Fatalf("rows %q, JSON %+v", rows, want)
	}
	backlogs := map[string]string{}
	for _, r := range rows {
		backlogs[r[0]] = r[1]
		for _, w := range want.Subscriptions {
			if w.Callback != r[0] {
				continue
			}
			if r[1] != strconv.FormatUint(w.Backlog, 10) || r[2] != strconv.FormatUint(w.Cursor, 10) || r[3] != strconv.FormatUint(w.Head, 10) {
				t.Errorf("%s: page backlog/cursor/head %s/%s/%s, hub %d/%d/%d", r[0], r[1], r[2], r[3], w.Backlog, w.Cursor, w.Head)
			}
		}
	}
	if backlogs[sub.srv.URL+"/slow"] != "3" || backlogs[sub.srv.URL+"/good"] != "0" || backlogs[sub.srv.URL+"/bad"] != "0" {
		t.Errorf("backlogs %v (the slow subscriber holds all 3)", backlogs)
	}
	b.Screenshot(t, "hub-subscriptions")
	b.Phone(t)
	b.Screenshot(t, "hub-subscriptions-phone")
	b.Desktop(t)

	// Dead letters, and a replay to the recovered callback.
	b.Click(t, `main nav a[href="dead-letters"]`)
	ids := b.Texts(t, "tbody tr td:first-child")
	if len(ids) != 3 {
		t.Fatalf("dead letters %q", ids)
	}
	if errs := b.Texts(t, "tbody td.bad"); len(errs) != 3 || !strings.Contains(errs[0], "500") {
		t.Errorf("last errors %q", errs)
	}
	b.Screenshot(t, "hub-deadletters")
	sub.failing.Store(false)
	b.Click(t, `button[aria-label="Replay dead letter `+ids[0]+`"]`)
	if loc := b.Location(t); loc != base+"/admin/dead-letters" {
		t.Errorf("after the replay: %s", loc)
	}
	if msg := b.Text(t, `[role="status"]`); msg != "Dead letter "+ids[0]+" replayed: delivered." {
		t.Errorf("replay message %q", msg)
	}
	if left := b.Texts(t, "tbody tr td:first-child"); len(left) != 2 || left[0] == ids[0] {
		t.Errorf("dead letters after the replay %q", left)
	}
	if got := sub.bodies("/bad"); len(got) != 1 || got[0] != "<urlset><n>1</n></urlset>" {
		t.Errorf("the replay delivered %q", got)
	}
	b.Phone(t)
	b.Screenshot(t, "hub-deadletters-phone")
	b.Desktop(t)

	// Log out: the pages send back to the form.
	b.Click(t, `form[action="logout"] button`)
	b.Navigate(t, base+"/admin/dead-letters")
	if loc := b.Location(t); loc != base+"/admin/" {
		t.Errorf("after logging out: %s", loc)
	}
	b.AssertSameOrigin(t, base)
}

// waitHub waits for the hub command's /healthz.
func waitHub(t *testing.T, client *http.Client, base string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
