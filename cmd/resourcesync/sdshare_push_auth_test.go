package main

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSDSharePushToken: sdshare serve --push-token-file pushes a change to
// a real sdshare receive that requires the token (its pushes were refused
// with 401 before the flag existed); the token file's secret is printed
// nowhere.
func TestSDSharePushToken(t *testing.T) {
	t.Setenv(envAuthToken, "push-secret-7")
	raddr := freeAddr(t)
	rout, _ := background(t, "sdshare", "receive", "--addr", raddr, "--store", t.TempDir(), "--graph", "http://ex.org/g")
	waitFor(t, "sdshare receive", 20*time.Second, func() bool { return strings.Contains(rout.String(), "listening on") })

	// A recording proxy in front of the receiver: what the pushes got.
	target, _ := url.Parse("http://" + raddr)
	var mu sync.Mutex
	var statuses []int
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(r *http.Response) error {
		if r.Request.Method == http.MethodPost {
			mu.Lock()
			statuses = append(statuses, r.StatusCode)
			mu.Unlock()
		}
		return nil
	}
	proxy := httptest.NewServer(rp)
	defer proxy.Close()

	tok := filepath.Join(t.TempDir(), "push-token")
	os.WriteFile(tok, []byte("push-secret-7\n"), 0o600)
	os.Unsetenv(envAuthToken) // serve itself requires no credential
	dir := t.TempDir()
	g := filepath.Join(dir, "g.nt")
	os.WriteFile(g, []byte("<http://ex.org/a> <http://ex.org/p> \"1\" .\n"), 0o644)
	addr := freeAddr(t)
	sout, _ := background(t, "sdshare", "serve", "--addr", addr, "--state", t.TempDir(), "--rescan", "100ms", "--debounce", "50ms",
		"--push", proxy.URL+"/", "--push-token-file", tok, "books="+dir)
	waitFor(t, "sdshare serve", 20*time.Second, func() bool { return strings.Contains(sout.String(), "serving SDShare") })
	time.Sleep(300 * time.Millisecond) // the baseline is loaded; what follows is a change
	os.WriteFile(g, []byte("<http://ex.org/a> <http://ex.org/p> \"2\" .\n"), 0o644)
	waitFor(t, "a push", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(statuses) > 0
	})
	mu.Lock()
	got := append([]int(nil), statuses...)
	mu.Unlock()
	for _, c := range got {
		if c != http.StatusOK {
			t.Fatalf("push statuses %v, want 200 (the receiver takes the token)", got)
		}
	}
	for _, out := range []string{sout.String(), rout.String()} {
		if strings.Contains(out, "push-secret-7") {
			t.Errorf("the token is printed:\n%s", out)
		}
	}
}

// TestSDSharePushLogRedacted: a push that fails is logged with its
// receiver's URL; a token in that URL's query is not printed.
func TestSDSharePushLogRedacted(t *testing.T) {
	const secret = "QSECRET-push-9"
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer recv.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "g.nt"), []byte("<http://ex.org/a> <http://ex.org/p> \"1\" .\n"), 0o644)
	out, stop := background(t, "sdshare", "serve", "--addr", freeAddr(t), "--state", t.TempDir(),
		"--push", recv.URL+"/push?token="+secret, "books="+dir)
	waitFor(t, "a failed push logged", 30*time.Second, func() bool { return strings.Contains(out.String(), "delivery failed") })
	stop()
	if s := out.String(); strings.Contains(s, secret) {
		t.Errorf("the push URL's token is printed:\n%s", s)
	}
}
