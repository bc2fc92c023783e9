package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// TestServeAuthBrowser: what a person with a browser, and a machine
// client, see at a protected serve. With --basic-auth-file the 401
// carries "WWW-Authenticate: Basic realm=..." (the browser asks for a
// user and password); with a token only, a browser gets a short page
// saying how to pass the token (curl, resourcesync --bearer-token-file);
// machine clients keep the plain text either way.
func TestServeAuthBrowser(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("content of a"), 0o644)
	tokens, htpasswd := authFiles(t)
	hc, _ := testnet.Client(t)
	browser := func(r *http.Request) {
		r.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
		r.Header.Set("Sec-Fetch-Mode", "navigate")
		r.Header.Set("Sec-Fetch-Dest", "document")
	}
	curl := func(r *http.Request) { r.Header.Set("Accept", "*/*") }
	for _, tc := range []struct {
		name      string
		flags     []string
		client    func(*http.Request)
		auth      string
		challenge string // a WWW-Authenticate value expected
		ctype     string
		says      []string
	}{
		{"basic, browser", []string{"--basic-auth-file", htpasswd}, browser, "",
			`Basic realm="resourcesync", charset="UTF-8"`, "text/html", []string{"Sign-in required", "Your browser asks for them"}},
		{"basic, wrong password, browser", []string{"--basic-auth-file", htpasswd}, browser, "Basic " + basicValue("alice", "nope"),
			`Basic realm="resourcesync", charset="UTF-8"`, "text/html", []string{"Wrong credentials", "The ones given were refused"}},
		{"basic, curl", []string{"--basic-auth-file", htpasswd}, curl, "",
			`Basic realm="resourcesync", charset="UTF-8"`, "text/plain", []string{"authentication required"}},
		{"token, browser", []string{"--auth-token-file", tokens}, browser, "",
			`Bearer realm="resourcesync"`, "text/html", []string{"which a browser cannot send", "curl -H 'Authorization: Bearer TOKEN' http://ADDR/a.txt",
				"resourcesync sync --bearer-token-file FILE http://ADDR/ DEST", "$RESOURCESYNC_BEARER_TOKEN"}},
		{"token, wrong token, browser", []string{"--auth-token-file", tokens}, browser, badBearer,
			`Bearer realm="resourcesync", error="invalid_token"`, "text/html", []string{"Wrong credentials", "which a browser cannot send"}},
		{"token, curl", []string{"--auth-token-file", tokens}, curl, "",
			`Bearer realm="resourcesync"`, "text/plain", []string{"authentication required"}},
		{"token, wrong token, curl", []string{"--auth-token-file", tokens}, curl, badBearer,
			`Bearer realm="resourcesync", error="invalid_token"`, "text/plain", []string{"wrong credentials"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeAddr(t)
			args := append([]string{"serve", "--addr", addr, "--rescan-interval", "0", "--no-hub", "--state", t.TempDir()}, tc.flags...)
			out, _ := background(t, append(args, dir)...)
			waitFor(t, "serve", 20*time.Second, func() bool { return strings.Contains(out.String(), "serving ") })
			req, _ := http.NewRequest("GET", "http://"+addr+"/a.txt", nil)
			tc.client(req)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body := string(b)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("status %d, want 401", resp.StatusCode)
			}
			if got := resp.Header.Values("WWW-Authenticate"); len(got) != 1 || got[0] != tc.challenge {
				t.Errorf("WWW-Authenticate %q, want %q", got, tc.challenge)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.ctype) {
				t.Errorf("Content-Type %q, want %s", ct, tc.ctype)
			}
			for _, s := range tc.says {
				if s = strings.ReplaceAll(s, "ADDR", addr); !strings.Contains(body, s) {
					t.Errorf("the page lacks %q:\n%s", s, body)
				}
			}
			if tc.ctype == "text/plain" && strings.Contains(body, "<") {
				t.Errorf("a machine client got markup:\n%s", body)
			}
		})
	}
}
