package authn

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRevokeByEmptying: what an operator does in an incident — empty the
// token file, delete it, comment out every line, or leave a file that
// does not parse — takes effect at the next reload: the old token gets
// 401 (fail closed), not "the last good ones stay in force". The same
// for the htpasswd file. A file put back lets the credential in again,
// and a credential of the other file (or the environment's) is not
// touched.
func TestRevokeByEmptying(t *testing.T) {
	for _, tc := range []struct {
		name   string
		basic  bool // break the htpasswd file instead of the token file
		revoke func(t *testing.T, name string)
	}{
		{"empty", false, func(t *testing.T, name string) { write(t, name, "") }},
		{"deleted", false, func(t *testing.T, name string) { os.Remove(name) }},
		{"commented out", false, func(t *testing.T, name string) { write(t, name, "# old-token\n#second-token\n") }},
		{"garbage", false, func(t *testing.T, name string) { write(t, name, "old-token\nnot one token\n") }},
		{"htpasswd empty", true, func(t *testing.T, name string) { write(t, name, "\n") }},
		{"htpasswd deleted", true, func(t *testing.T, name string) { os.Remove(name) }},
		{"htpasswd commented out", true, func(t *testing.T, name string) {
			b, _ := os.ReadFile(name)
			write(t, name, "#"+string(b))
		}},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			dir := t.TempDir()
			tf := write(t, filepath.Join(dir, "tokens"), "old-token\nsecond-token\n")
			bf := write(t, filepath.Join(dir, "htpasswd"), htpasswdLine(t, "alice", "a"))
			_, srv := newServer(t, Config{TokenFile: tf, BasicFile: bf, Tokens: []string{"env-token"}, CheckEvery: -1, Budget: stopped()})
			target, keep := tf, basic("alice", "a")
			try := bearer("old-token")
			if tc.basic {
				target, keep, try = bf, bearer("old-token"), basic("alice", "a")
			}
			if resp, _ := get(t, srv.URL, try); resp.StatusCode != 200 {
				t.Fatalf("before: %d", resp.StatusCode)
			}
			good, _ := os.ReadFile(target)
			tc.revoke(t, target)
			// A later modification time, so that a rewrite within the
			// file system's time granularity is seen too.
			os.Chtimes(target, time.Now(), time.Now().Add(time.Hour))
			resp, body := get(t, srv.URL, try)
			if resp.StatusCode != 401 {
				t.Fatalf("after the file was %s: %d %s, want 401", tc.name, resp.StatusCode, body)
			}
			want := []string{`Bearer realm="resourcesync"`, `Basic realm="resourcesync", charset="UTF-8"`}
			if got := resp.Header.Values("WWW-Authenticate"); len(got) != 2 || !strings.HasPrefix(got[0], want[0]) || got[1] != want[1] {
				t.Errorf("challenges %q, want both schemes still offered", got)
			}
			for _, other := range []func(*http.Request){keep, bearer("env-token")} {
				if resp, _ := get(t, srv.URL, other); resp.StatusCode != 200 {
					t.Errorf("a credential of elsewhere: %d", resp.StatusCode)
				}
			}
			write(t, target, string(good))
			os.Chtimes(target, time.Now(), time.Now().Add(2*time.Hour))
			if resp, _ := get(t, srv.URL, try); resp.StatusCode != 200 {
				t.Errorf("file put back: %d", resp.StatusCode)
			}
		})
	}
}
