package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/browsertest"
	"github.com/resourcesync-go/resourcesync/wspush"
)

// TestBrowserLive: Chromium opens serve's live page, which subscribes
// (WebSocketChannel2023) and opens the WebSocket; a file written in DIR
// then shows on the page, pushed, without a reload.
func TestBrowserLive(t *testing.T) {
	b := browsertest.New(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "old.txt"), []byte("old"), 0o644)
	base, _ := startServe(t, dir, "--watch", "--debounce", "50ms")
	b.Navigate(t, base+".resourcesync/live")
	waitFor(t, "the live page to connect", 30*time.Second, func() bool {
		return strings.HasPrefix(browsertest.Eval[string](t, b, `document.getElementById('state').textContent`), "live")
	})
	if err := os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the change on the page", 30*time.Second, func() bool {
		for _, s := range b.Texts(t, "#changes li") {
			if strings.HasPrefix(s, "Create "+base+"new.txt at ") {
				return true
			}
		}
		return false
	})
	b.AssertSameOrigin(t, strings.TrimSuffix(base, "/"))
	b.Screenshot(t, "live")
}

// TestServePushCredentials: with --auth-token-file the subscription
// needs the token, as every other endpoint of serve; the WebSocket is
// opened with the receiveFrom token alone (a browser cannot send an
// Authorization header there). The Capability List and a Link header
// advertise the endpoint.
func TestServePushCredentials(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	tokFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokFile, []byte("s3cret\n"), 0o600)
	base, _ := startServe(t, dir, "--auth-token-file", tokFile)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topic := base + ".resourcesync/default/capabilitylist.xml"
	if _, err := wspush.Subscribe(ctx, http.DefaultClient, base+".resourcesync/push", topic); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("subscription without the token: %v, want 401", err)
	}
	authed := &http.Client{Transport: bearer{"s3cret"}}
	resp, body := fetchDoc(t, authed, topic, "")
	if !strings.Contains(string(body), `rel="`+wspush.SubscriptionRel+`" href="`+base+`.resourcesync/push"`) {
		t.Errorf("the Capability List does not name the push:\n%s", body)
	}
	if !strings.Contains(strings.Join(resp.Header.Values("Link"), ","), wspush.SubscriptionRel) {
		t.Errorf("no Link header naming the push: %v", resp.Header.Values("Link"))
	}
	d, err := wspush.Subscribe(ctx, authed, base+".resourcesync/push", topic)
	if err != nil {
		t.Fatal(err)
	}
	r, err := wspush.Dial(ctx, nil, d.ReceiveFrom)
	if err != nil {
		t.Fatalf("receiveFrom without credentials: %v", err)
	}
	r.Close()
}

type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}
