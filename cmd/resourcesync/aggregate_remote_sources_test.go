package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestAggregateRemoteSourcesNoLocalFiles: a sources list fetched from a
// URL chooses the hosts its Sources fetch from, so it must not name the
// operator's local files: an absolute --bearer-token-file in it (say a
// service-account token) is refused and its token never sent; a
// plain-http list is refused without --allow-http-sources; a path inside
// --sources-files-dir is what a remote list may name.
func TestAggregateRemoteSourcesNoLocalFiles(t *testing.T) {
	const secret = "service-account-s3cret"
	secrets := t.TempDir()
	tokenFile := filepath.Join(secrets, "token")
	if err := os.WriteFile(tokenFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	allowed := t.TempDir()
	if err := os.WriteFile(filepath.Join(allowed, "token"), []byte("allowed-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The host the list chooses: it records every Authorization header.
	var (
		mu    sync.Mutex
		auths []string
	)
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer thief.Close()
	seen := func() string {
		mu.Lock()
		defer mu.Unlock()
		s := strings.Join(auths, "|")
		auths = nil
		return s
	}

	var list atomic.Value // string
	lists := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, list.Load())
	}))
	defer lists.Close()

	tests := []struct {
		name  string
		list  string
		flags []string
		code  int
		msg   string // in stderr
		auth  string // the Authorization headers the thief saw
	}{
		{"plain http refused", thief.URL + "/rs/ one --bearer-token-file " + quoteSourcesField(tokenFile) + "\n", nil, 2, "--allow-http-sources", ""},
		{"absolute token file", thief.URL + "/rs/ one --bearer-token-file " + quoteSourcesField(tokenFile) + "\n", []string{"--allow-http-sources"}, 2, "--sources-files-dir", ""},
		{"absolute token file with a files dir", thief.URL + "/rs/ one --bearer-token-file " + quoteSourcesField(tokenFile) + "\n", []string{"--allow-http-sources", "--sources-files-dir", allowed}, 2, "--sources-files-dir", ""},
		{"dot-dot out of the files dir", thief.URL + "/rs/ one --netrc-file ../x/netrc\n", []string{"--allow-http-sources", "--sources-files-dir", allowed}, 2, "..", ""},
		{"ca-cert", thief.URL + "/rs/ one --ca-cert " + quoteSourcesField(tokenFile) + "\n", []string{"--allow-http-sources"}, 2, "--sources-files-dir", ""},
		{"a file in the files dir", thief.URL + "/rs/ one --bearer-token-file token\n", []string{"--allow-http-sources", "--sources-files-dir", allowed}, 1, "", "Bearer allowed-token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list.Store(tt.list)
			args := append([]string{"aggregate", "--once", "--sources", lists.URL + "/sources.txt", "--root", t.TempDir()}, tt.flags...)
			code, out, errOut := runCLI(t, args...)
			if code != tt.code || !strings.Contains(errOut, tt.msg) {
				t.Errorf("exit %d, want %d with %q in stderr\nstdout:\n%s\nstderr:\n%s", code, tt.code, tt.msg, out, errOut)
			}
			got := seen()
			if strings.Contains(got, secret) || strings.Contains(out+errOut, secret) {
				t.Fatalf("the token of a local file named by a remote list was sent: %q", got)
			}
			if !strings.Contains(got, tt.auth) || tt.auth == "" && got != "" {
				t.Errorf("the list's host saw Authorization %q, want %q", got, tt.auth)
			}
		})
	}
}

// quoteSourcesField quotes a path for a sources line (a Windows temp path may
// hold blanks).
func quoteSourcesField(v string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `"`, `\"`) + `"`
}
