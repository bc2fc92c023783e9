package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServersRefuseReboundHost: serve, sdshare serve and hub on loopback
// answer a Host naming this machine or their public URL's host, and
// refuse (421) any other name: a DNS-rebinding page (its own name
// resolved to 127.0.0.1 once loaded) cannot read the collection or drive
// the hub. sync --status-addr and sdshare receive have the same guard
// (TestStatusAddrRefusesForeignHost, TestSDShareReceiveDNSRebinding).
func TestServersRefuseReboundHost(t *testing.T) {
	dir := t.TempDir()
	coll := filepath.Join(dir, "coll")
	os.MkdirAll(coll, 0o755)
	os.WriteFile(filepath.Join(coll, "a.txt"), []byte("a resource\n"), 0o644)
	rdf := filepath.Join(dir, "g.nt")
	os.WriteFile(rdf, []byte("<http://example.org/a> <http://example.org/p> \"1\" .\n"), 0o644)
	for _, tc := range []struct {
		name string
		args func(addr string) []string
		path string
	}{
		{"serve", func(a string) []string {
			return []string{"serve", "--addr", a, "--base-url", "http://data.example.org/", "--state", filepath.Join(dir, "serve-state"), coll}
		}, "/.well-known/resourcesync"},
		{"sdshare serve", func(a string) []string {
			return []string{"sdshare", "serve", "--addr", a, "--base-url", "http://data.example.org/", "--state", filepath.Join(dir, "sds-state"), "col=" + rdf}
		}, "/healthz"},
		{"hub", func(a string) []string {
			return []string{"hub", "--addr", a, "--url", "http://data.example.org/hub", "--state", filepath.Join(dir, "hub-state")}
		}, "/healthz"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			addr := freeAddr(t)
			out, _ := background(t, tc.args(addr)...)
			get := func(host string) int {
				req, _ := http.NewRequest("GET", "http://"+addr+tc.path, nil)
				req.Host = host
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return 0
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			waitFor(t, tc.name+" listening", time.Minute, func() bool { return get(addr) == http.StatusOK })
			for host, want := range map[string]int{
				addr: http.StatusOK, "localhost": http.StatusOK, "data.example.org": http.StatusOK, "DATA.example.org:80": http.StatusOK,
				"rebind.evil.example": http.StatusMisdirectedRequest, "rebind.evil.example:" + strings.Split(addr, ":")[1]: http.StatusMisdirectedRequest,
			} {
				if got := get(host); got != want {
					t.Errorf("Host %q: %d, want %d\n%s", host, got, want, out)
				}
			}
		})
	}
}
