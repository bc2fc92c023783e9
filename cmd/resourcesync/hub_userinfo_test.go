package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestServeExternalHubUserinfo: serve --hub with user:password@ in the
// URL publishes to that hub with HTTP basic (and --hub-token as a bearer
// token) but advertises the hub without the password: not in the
// Capability List, not in the notifications, not in the output.
func TestServeExternalHubUserinfo(t *testing.T) {
	const pw = "HUBPW-secret-4"
	var mu sync.Mutex
	var auths, bodies []string
	hubSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		bodies = append(bodies, string(b)+" "+strings.Join(r.Header.Values("Link"), " "))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hubSrv.Close()
	hubURL := strings.Replace(hubSrv.URL, "http://", "http://pub:"+pw+"@", 1) + "/hub"

	for _, tc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"basic", nil, basicAuth("pub", pw)},
		{"token wins", []string{"--hub-token", "hubtok-77"}, "Bearer hubtok-77"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			auths, bodies = nil, nil
			mu.Unlock()
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
			addr := freeAddr(t)
			args := append([]string{"serve", "--addr", addr, "--watch", "--rescan-interval", "0", "--state", t.TempDir(), "--hub", hubURL}, tc.extra...)
			out, stop := background(t, append(args, dir)...)
			waitFor(t, "serve", 20*time.Second, func() bool { return strings.Contains(out.String(), "serving") })
			resp, err := http.Get("http://" + addr + "/.resourcesync/default/capabilitylist.xml")
			if err != nil {
				t.Fatal(err)
			}
			cl, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(cl), hubSrv.URL+"/hub") || strings.Contains(string(cl), pw) {
				t.Errorf("Capability List advertises the hub as:\n%s", cl)
			}
			os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b"), 0o644)
			waitFor(t, "a publish", 20*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(auths) > 0
			})
			stop()
			mu.Lock()
			defer mu.Unlock()
			if auths[0] != tc.want {
				t.Errorf("the hub got Authorization %q, want %q", auths[0], tc.want)
			}
			if s := out.String() + strings.Join(bodies, "\n"); strings.Contains(s, pw) {
				t.Errorf("the hub password is printed or published:\n%s", s)
			}
		})
	}
}

func basicAuth(user, pass string) string {
	r, _ := http.NewRequest("GET", "http://x/", nil)
	r.SetBasicAuth(user, pass)
	return r.Header.Get("Authorization")
}
