package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCredentialsMessages: a 401 says which credentials the server
// refused, or that none were given and with which flags to give them.
func TestCredentialsMessages(t *testing.T) {
	syncLoopbackOnly(t)
	t.Setenv("RESOURCESYNC_BEARER_TOKEN", "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); ok && u == "alice" && p == "right" {
			http.NotFound(w, r)
			return
		}
		http.Error(w, "authentication required", http.StatusUnauthorized)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	os.WriteFile(token, []byte("wrong-token\n"), 0o600)
	netrc := filepath.Join(dir, "netrc")
	os.WriteFile(netrc, []byte("machine 127.0.0.1 login alice password wrong\n"), 0o600)
	noNetrc := filepath.Join(dir, "absent")
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"none", []string{"--netrc-file", noNetrc, srv.URL + "/"},
			"", "(no credentials given; give them with --header 'Name: value', --bearer-token-file FILE (or $RESOURCESYNC_BEARER_TOKEN), a .netrc entry (--netrc-file FILE, default ~/.netrc) or user:password@ in the URL)"},
		{"url", []string{"--netrc-file", noNetrc, "http://alice:wrong@" + host + "/"},
			"", "(the server refused the credentials given (basic, from the URL): check them"},
		{"netrc", []string{"--netrc-file", netrc, srv.URL + "/"},
			"", "(the server refused the credentials given (basic, from " + netrc + "): check them"},
		{"bearer-token-file", []string{"--netrc-file", noNetrc, "--bearer-token-file", token, srv.URL + "/"},
			"", "(the server refused the credentials given (bearer token, from --bearer-token-file): check them"},
		{"env", []string{"--netrc-file", noNetrc, srv.URL + "/"},
			"wrong-token", "(the server refused the credentials given (bearer token, from $RESOURCESYNC_BEARER_TOKEN): check them"},
		{"header", []string{"--netrc-file", noNetrc, "--header", "X-Api-Key: nope", srv.URL + "/"},
			"", "(the server refused the credentials given (header X-Api-Key, from --header): check them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("RESOURCESYNC_BEARER_TOKEN", tc.env)
			args := append([]string{"sync", "--progress", "quiet"}, tc.args...)
			code, _, stderr := runCLI(t, append(args, t.TempDir())...)
			if code != exitUsage || !strings.Contains(stderr, "Unauthorized (401)") || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want %d; stderr lacks %q:\n%s", code, exitUsage, tc.want, stderr)
			}
			if strings.Contains(stderr, "wrong") {
				t.Errorf("a secret in the message:\n%s", stderr)
			}
		})
	}
}
