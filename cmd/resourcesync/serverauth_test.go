package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/testnet"
)

// authFiles writes a token file (token "reader-token") and an htpasswd
// file (alice, password "wonder land", bcrypt at the lowest cost).
func authFiles(t *testing.T) (tokens, htpasswd string) {
	t.Helper()
	dir := t.TempDir()
	tokens = filepath.Join(dir, "tokens")
	os.WriteFile(tokens, []byte("# who may read\nreader-token\n"), 0o600)
	h, err := bcrypt.GenerateFromPassword([]byte("wonder land"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	htpasswd = filepath.Join(dir, "htpasswd")
	os.WriteFile(htpasswd, []byte("alice:"+string(h)+"\n"), 0o600)
	return tokens, htpasswd
}

type authReq struct {
	name   string
	method string
	path   string
	auth   string // Authorization header
	form   url.Values
	code   int  // wanted status; 0: anything but 401 and 429
	notOK  bool // wanted: anything but 2xx
}

const (
	goodBearer = "Bearer reader-token"
	badBearer  = "Bearer reader-tokeN"
)

var goodBasic = "Basic " + basicValue("alice", "wonder land")

func basicValue(u, p string) string {
	r, _ := http.NewRequest("GET", "/", nil)
	r.SetBasicAuth(u, p)
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
}

// checkAuth sends each request to base and checks its status; a 401
// carries the challenges and echoes no secret.
func checkAuth(t *testing.T, hc *http.Client, base string, challenges []string, reqs []authReq) {
	t.Helper()
	for _, rq := range reqs {
		t.Run(rq.name, func(t *testing.T) {
			var body io.Reader
			if rq.form != nil {
				body = strings.NewReader(rq.form.Encode())
			}
			req, _ := http.NewRequest(orDefaultStr(rq.method, "GET"), base+rq.path, body)
			if rq.form != nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			if rq.auth != "" {
				req.Header.Set("Authorization", rq.auth)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case rq.notOK:
				if resp.StatusCode < 300 {
					t.Fatalf("%s %s: %d, want a refusal: %s", req.Method, rq.path, resp.StatusCode, b)
				}
			case rq.code == 0:
				if resp.StatusCode == 401 || resp.StatusCode == 429 {
					t.Fatalf("%s %s: %d, want it through: %s", req.Method, rq.path, resp.StatusCode, b)
				}
			case resp.StatusCode != rq.code:
				t.Fatalf("%s %s: %d, want %d: %s", req.Method, rq.path, resp.StatusCode, rq.code, b)
			}
			if resp.StatusCode == 401 && !rq.notOK {
				if got := strings.Join(resp.Header.Values("WWW-Authenticate"), "|"); !strings.Contains(got, challenges[0]) || len(challenges) > 1 && !strings.Contains(got, challenges[1]) {
					t.Errorf("WWW-Authenticate %q, want %q", got, challenges)
				}
				for _, s := range []string{"reader-tok", "wonder", "alice"} {
					if strings.Contains(string(b), s) {
						t.Errorf("401 body %q echoes %q", b, s)
					}
				}
			}
		})
	}
}

func orDefaultStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestServeAuth: serve with a token file and an htpasswd file refuses
// every document, resource, the status page, metrics, topics and hub
// subscriptions without (or with wrong) credentials, and serves them
// with the token or the basic password. The embedded hub's publishes
// need --hub-token, its admin pages the admin token, not the
// credentials; a path through the admin's prefix reaches no file.
func TestServeAuth(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("content of a"), 0o644)
	tokens, htpasswd := authFiles(t)
	addr := freeAddr(t)
	out, _ := background(t, "serve", "--addr", addr, "--rescan-interval", "0", "--allow-private-callbacks", "--state", t.TempDir(),
		"--auth-token-file", tokens, "--basic-auth-file", htpasswd, "--hub-token", "pub-token", "--hub-admin-token", "adm-token", dir)
	waitFor(t, "serve", 20*time.Second, func() bool { return strings.Contains(out.String(), "serving ") })
	if !strings.Contains(out.String(), "credentials required: 1 bearer token or HTTP basic for 1 user") {
		t.Errorf("no start-up line on credentials:\n%s", out)
	}
	hc, _ := testnet.Client(t)
	base := "http://" + addr
	topic := base + "/.resourcesync/default/notifications"
	sub := url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic}, "hub.callback": {base + "/nowhere"}}
	checkAuth(t, hc, base, []string{`Bearer realm="resourcesync"`, `Basic realm="resourcesync", charset="UTF-8"`}, []authReq{
		{name: "resource", path: "/a.txt", code: 401},
		{name: "resource wrong token", path: "/a.txt", auth: badBearer, code: 401},
		{name: "resource wrong password", path: "/a.txt", auth: "Basic " + basicValue("alice", "wonderland"), code: 401},
		{name: "source description", path: "/.well-known/resourcesync", code: 401},
		{name: "capability list", path: "/.resourcesync/default/capabilitylist.xml", code: 401},
		{name: "status page", path: "/.resourcesync/", code: 401},
		{name: "metrics", path: "/.resourcesync/metrics", code: 401},
		{name: "topic", path: "/.resourcesync/default/notifications", code: 401},
		{name: "robots", path: "/robots.txt", code: 401},
		{name: "subscribe", method: "POST", path: "/.resourcesync/hub", form: sub, code: 401},
		{name: "through the admin prefix", path: "/.resourcesync/hub/admin/../../../a.txt", notOK: true},
		{name: "resource with token", path: "/a.txt", auth: goodBearer, code: 200},
		{name: "resource with basic", path: "/a.txt", auth: goodBasic, code: 200},
		{name: "status page with token", path: "/.resourcesync/", auth: goodBearer, code: 200},
		{name: "source description with basic", path: "/.well-known/resourcesync", auth: goodBasic, code: 200},
		{name: "metrics with token", path: "/.resourcesync/metrics", auth: goodBearer, code: 200},
		{name: "subscribe with token", method: "POST", path: "/.resourcesync/hub", form: sub, auth: goodBearer, code: 202},
		{name: "admin with its token", path: "/.resourcesync/hub/admin/stats", auth: "Bearer adm-token", code: 200},
		{name: "admin login page with the site's basic", path: "/.resourcesync/hub/admin/", auth: goodBasic, code: 200},
		{name: "publish with the hub token", method: "POST", path: "/.resourcesync/hub", auth: "Bearer pub-token",
			form: url.Values{"hub.mode": {"publish"}, "hub.topic": {topic}}},
	})
	if strings.Contains(out.String(), "reader-token") || strings.Contains(out.String(), "wonder land") {
		t.Errorf("a secret in the output:\n%s", out)
	}
}

// TestServeAuthHubWithoutPublishToken: without --hub-token the embedded
// hub's publishes need the credentials too.
func TestServeAuthHubWithoutPublishToken(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	tokens, _ := authFiles(t)
	addr := freeAddr(t)
	out, _ := background(t, "serve", "--addr", addr, "--rescan-interval", "0", "--no-dumps", "--state", t.TempDir(), "--auth-token-file", tokens, dir)
	waitFor(t, "serve", 20*time.Second, func() bool { return strings.Contains(out.String(), "serving ") })
	hc, _ := testnet.Client(t)
	base := "http://" + addr
	checkAuth(t, hc, base, []string{`Bearer realm="resourcesync"`}, []authReq{
		{name: "publish", method: "POST", path: "/.resourcesync/hub", form: url.Values{"hub.mode": {"publish"}, "hub.topic": {base + "/.resourcesync/default/notifications"}}, code: 401},
		{name: "admin is not served", path: "/.resourcesync/hub/admin/stats", code: 401},
	})
}

// bearerTransport sends a bearer token with every request, as a client
// of a protected Source would.
type bearerTransport struct {
	rt    http.RoundTripper
	token string
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

// TestServeAuthMirror: a Source served with --auth-token-file is
// mirrored, byte for byte, by a client that sends the token; without it
// the mirror cannot even discover the Source.
func TestServeAuthMirror(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"a.txt": "alpha", "sub/b.txt": "beta", "c d.txt": "gamma"}
	for name, data := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644)
	}
	tokens, _ := authFiles(t)
	addr := freeAddr(t)
	out, _ := background(t, "serve", "--addr", addr, "--rescan-interval", "0", "--no-hub", "--state", t.TempDir(), "--auth-token-file", tokens, dir)
	waitFor(t, "serve", 20*time.Second, func() bool { return strings.Contains(out.String(), "serving ") })
	hc, _ := testnet.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := "http://" + addr + "/"

	if _, err := destination.Sync(ctx, base, destination.Options{Dest: t.TempDir(), Client: hc}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("without credentials: %v, want a 401", err)
	}
	authed := &http.Client{Transport: bearerTransport{hc.Transport, "reader-token"}, Timeout: hc.Timeout}
	dest := t.TempDir()
	rep, err := destination.Sync(ctx, base, destination.Options{Dest: dest, Client: authed})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		got, err := os.ReadFile(filepath.Join(dest, name))
		if err != nil || string(got) != data {
			t.Errorf("%s: %q %v, want %q (report %+v)", name, got, err, data, rep)
		}
	}
}

// TestHubAuth: hub --auth-token-file refuses subscription requests and
// /metrics without the token (and publishes, without --publish-token);
// /healthz stays open.
func TestHubAuth(t *testing.T) {
	tokens, htpasswd := authFiles(t)
	for _, withPub := range []bool{false, true} {
		name := "without publish token"
		args := []string{"hub", "--state", t.TempDir(), "--allow-private-callbacks", "--auth-token-file", tokens, "--basic-auth-file", htpasswd}
		if withPub {
			name = "with publish token"
			args = append(args, "--publish-token", "pub-token")
		}
		t.Run(name, func(t *testing.T) {
			addr := freeAddr(t)
			out, _ := background(t, append(args, "--addr", addr)...)
			waitFor(t, "hub", 20*time.Second, func() bool { return strings.Contains(out.String(), "hub at ") })
			hc, _ := testnet.Client(t)
			base := "http://" + addr
			sub := url.Values{"hub.mode": {"subscribe"}, "hub.topic": {"http://127.0.0.1:1/topic"}, "hub.callback": {"http://127.0.0.1:1/cb"}}
			reqs := []authReq{
				{name: "subscribe", method: "POST", path: "/", form: sub, code: 401},
				{name: "subscribe wrong token", method: "POST", path: "/", form: sub, auth: badBearer, code: 401},
				{name: "metrics", path: "/metrics", code: 401},
				{name: "healthz", path: "/healthz", code: 200},
				{name: "subscribe with token", method: "POST", path: "/", form: sub, auth: goodBearer, code: 202},
				{name: "subscribe with basic", method: "POST", path: "/", form: sub, auth: goodBasic, code: 202},
				{name: "metrics with token", path: "/metrics", auth: goodBearer, code: 200},
			}
			pub := url.Values{"hub.mode": {"publish"}, "hub.topic": {"http://127.0.0.1:1/topic"}}
			if withPub {
				reqs = append(reqs, authReq{name: "publish with its token", method: "POST", path: "/", form: pub, auth: "Bearer pub-token"})
			} else {
				reqs = append(reqs, authReq{name: "publish", method: "POST", path: "/", form: pub, code: 401},
					authReq{name: "publish with token", method: "POST", path: "/", form: pub, auth: goodBearer})
			}
			checkAuth(t, hc, base, []string{`Bearer realm="hub"`, `Basic realm="hub", charset="UTF-8"`}, reqs)
		})
	}
}

// TestSDShareServeAuth: sdshare serve with credentials refuses the
// feeds, data and metrics without them; healthz stays open.
func TestSDShareServeAuth(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "g.nt"), []byte("<http://ex.org/a> <http://ex.org/p> \"x\" .\n"), 0o644)
	tokens, htpasswd := authFiles(t)
	addr := freeAddr(t)
	out, _ := background(t, "sdshare", "serve", "--addr", addr, "--state", t.TempDir(), "--resourcesync",
		"--auth-token-file", tokens, "--basic-auth-file", htpasswd, "books="+dir)
	waitFor(t, "sdshare serve", 20*time.Second, func() bool { return strings.Contains(out.String(), "serving SDShare") })
	hc, _ := testnet.Client(t)
	checkAuth(t, hc, "http://"+addr, []string{`Bearer realm="sdshare"`, `Basic realm="sdshare", charset="UTF-8"`}, []authReq{
		{name: "overview", path: "/", code: 401},
		{name: "fragments", path: "/books/fragments", code: 401},
		{name: "fragment", path: "/books/fragment?resource=http%3A%2F%2Fex.org%2Fa", code: 401},
		{name: "metrics", path: "/metrics", code: 401},
		{name: "resourcesync", path: "/.well-known/resourcesync", code: 401},
		{name: "wrong password", path: "/", auth: "Basic " + basicValue("alice", "x"), code: 401},
		{name: "healthz", path: "/healthz", code: 200},
		{name: "overview with token", path: "/", auth: goodBearer, code: 200},
		{name: "fragment with basic", path: "/books/fragment?resource=http%3A%2F%2Fex.org%2Fa", auth: goodBasic, code: 200},
	})
}

// TestSDShareReceiveAuth: sdshare receive with a token (here from the
// environment) refuses pushes without it and applies them with it; GET
// stays open.
func TestSDShareReceiveAuth(t *testing.T) {
	t.Setenv(envAuthToken, "push-token")
	addr := freeAddr(t)
	out, _ := background(t, "sdshare", "receive", "--addr", addr, "--store", t.TempDir(), "--graph", "http://ex.org/g")
	waitFor(t, "sdshare receive", 20*time.Second, func() bool { return strings.Contains(out.String(), "listening on") })
	hc, _ := testnet.Client(t)
	push := func(auth string) int {
		req, _ := http.NewRequest("POST", "http://"+addr+"/?resource=http%3A%2F%2Fex.org%2Fa",
			strings.NewReader("<http://ex.org/a> <http://ex.org/p> \"x\" .\n"))
		req.Header.Set("Content-Type", "application/n-triples")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), `Bearer realm="sdshare receive"`) {
			t.Errorf("challenge %q", resp.Header.Get("WWW-Authenticate"))
		}
		return resp.StatusCode
	}
	if c := push(""); c != 401 {
		t.Errorf("push without token: %d", c)
	}
	if c := push("Bearer nope"); c != 401 {
		t.Errorf("push with a wrong token: %d", c)
	}
	if c := push("Bearer push-token"); c != 200 {
		t.Errorf("push with the token: %d", c)
	}
	resp, err := hc.Get("http://" + addr + "/ping")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("ping: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestServerAuthBadFiles: an htpasswd line that is not bcrypt, or a
// token file that does not parse, stops the server at start (exit 2),
// naming the line.
func TestServerAuthBadFiles(t *testing.T) {
	dir := t.TempDir()
	md5 := filepath.Join(dir, "md5")
	os.WriteFile(md5, []byte("bob:$apr1$salt$hunter2hunter2hunter2\n"), 0o600)
	tok := filepath.Join(dir, "tok")
	os.WriteFile(tok, []byte("# ok\nhunter 2\n"), 0o600)
	src := t.TempDir()
	for _, args := range [][]string{
		{"serve", "--addr", "127.0.0.1:0", "--no-hub", "--state", t.TempDir(), "--basic-auth-file", md5, src},
		{"hub", "--addr", "127.0.0.1:0", "--state", t.TempDir(), "--auth-token-file", tok},
		{"sdshare", "serve", "--addr", "127.0.0.1:0", "--state", t.TempDir(), "--basic-auth-file", md5, "x=" + src},
		{"sdshare", "receive", "--addr", "127.0.0.1:0", "--store", t.TempDir(), "--auth-token-file", tok},
	} {
		code, stdout, stderr := runCLI(t, args...)
		want := "line 1 (user \"bob\"): an MD5"
		if strings.Contains(strings.Join(args, " "), tok) {
			want = "line 2: a token is one word"
		}
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", args, code, stderr, want)
		}
		if strings.Contains(stdout+stderr, "hunter") {
			t.Errorf("%v: a secret in the output: %s%s", args, stdout, stderr)
		}
	}
}

// TestServerAuthReload: a token file replaced while sdshare receive
// runs is read again (no restart): the new token is accepted, the old one
// refused.
func TestServerAuthReload(t *testing.T) {
	tokens, _ := authFiles(t)
	addr := freeAddr(t)
	out, _ := background(t, "sdshare", "receive", "--addr", addr, "--store", t.TempDir(), "--graph", "http://ex.org/g", "--auth-token-file", tokens)
	waitFor(t, "sdshare receive", 20*time.Second, func() bool { return strings.Contains(out.String(), "listening on") })
	hc, _ := testnet.Client(t)
	push := func(tok string) int {
		req, _ := http.NewRequest("POST", "http://"+addr+"/?resource=http%3A%2F%2Fex.org%2Fa", strings.NewReader(""))
		req.Header.Set("Content-Type", "application/n-triples") // a deletion names its type too
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := push("reader-token"); c != 200 {
		t.Fatalf("the first token: %d", c)
	}
	tmp := tokens + ".new"
	os.WriteFile(tmp, []byte("rotated-token\n"), 0o600)
	if err := os.Rename(tmp, tokens); err != nil {
		t.Fatal(err)
	}
	// The file is looked at again at most every 2 s, on a request: ones
	// without credentials, which spend no failure budget.
	waitFor(t, "the reload", 20*time.Second, func() bool {
		return push("") == 401 && strings.Contains(out.String(), "credentials reloaded")
	})
	if c := push("rotated-token"); c != 200 {
		t.Errorf("the new token: %d", c)
	}
	if c := push("reader-token"); c != 401 {
		t.Errorf("the revoked token: %d", c)
	}
}
