package main

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source"
)

// sourceBehind runs a Source of dir on a loopback port of its own whose
// documents name base (the URL clients reach it by: a proxy in front);
// it returns the Source's own address.
func sourceBehind(t *testing.T, dir, base string) (addr string, handler http.Handler) {
	t.Helper()
	src, err := source.Open(source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(),
		ChangeListPeriod: time.Hour, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(src.Handler(nil))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), src.Handler(nil)
}

// loopbackAddr returns a loopback address nothing listens on (for a
// program that must be told its port).
func loopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// needNginx returns the nginx binary; without one the test is skipped,
// except in CI, where scripts/test.sh installs it and its absence fails.
func needNginx(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"nginx", "/usr/sbin/nginx"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("nginx not found (scripts/test.sh installs Debian's nginx)")
	}
	t.Skip("nginx not found (apt-get install nginx)")
	return ""
}

// startNginx runs nginx in the foreground, one process, with the http
// servers given (each a "server { ... }" block), everything under a
// temporary prefix; it returns when every listen address answers.
func startNginx(t *testing.T, servers string, addrs ...string) {
	t.Helper()
	bin := needNginx(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "nginx.conf")
	tmp := filepath.Join(dir, "tmp")
	os.Mkdir(tmp, 0o755)
	err := os.WriteFile(conf, []byte(`events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path `+tmp+`/body;
	proxy_temp_path `+tmp+`/proxy;
	fastcgi_temp_path `+tmp+`/fastcgi;
	uwsgi_temp_path `+tmp+`/uwsgi;
	scgi_temp_path `+tmp+`/scgi;
	`+servers+`
}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	errLog := filepath.Join(dir, "error.log")
	// master_process off: one process, which keeps running as this user
	// (workers would switch to nobody and could not read the temp dir).
	cmd := exec.Command(bin, "-p", dir, "-c", conf, "-e", errLog,
		"-g", "daemon off; master_process off; pid "+filepath.Join(dir, "nginx.pid")+"; error_log "+errLog+";")
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	for _, a := range addrs {
		for i := 0; ; i++ {
			c, err := net.Dial("tcp", a)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-exited:
				log, _ := os.ReadFile(errLog)
				t.Fatalf("nginx exited: %s\n%s", out, log)
			case <-time.After(20 * time.Millisecond):
			}
			if i > 500 {
				t.Fatalf("nginx does not listen on %s", a)
			}
		}
	}
}

// TestSyncBehindNginx: a Source behind Debian's nginx, once with
// auth_basic (htpasswd) and once with a bearer-token check, is mirrored
// with each form of credentials; without credentials sync fails with exit
// 2 and a message that says 401.
func TestSyncBehindNginx(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	files := map[string]string{"a.txt": "alpha", "sub/b.txt": "bravo"}
	for name, body := range files {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	basicAddr, bearerAddr := loopbackAddr(t), loopbackAddr(t)
	basicUp, _ := sourceBehind(t, dir, "http://"+basicAddr+"/")
	bearerUp, _ := sourceBehind(t, dir, "http://"+bearerAddr+"/")

	secrets := t.TempDir()
	sum := sha1.Sum([]byte("open sesame"))
	htpasswd := filepath.Join(secrets, "htpasswd")
	os.WriteFile(htpasswd, []byte("alice:{SHA}"+base64.StdEncoding.EncodeToString(sum[:])+"\n"), 0o644)
	const token = "tok-5e6f7a"
	startNginx(t, `
	server {
		listen `+basicAddr+`;
		location / {
			auth_basic "mirror";
			auth_basic_user_file `+htpasswd+`;
			proxy_pass http://`+basicUp+`;
		}
	}
	server {
		listen `+bearerAddr+`;
		location / {
			if ($http_authorization != "Bearer `+token+`") { return 401; }
			proxy_pass http://`+bearerUp+`;
		}
	}`, basicAddr, bearerAddr)

	tokenFile := filepath.Join(secrets, "token")
	os.WriteFile(tokenFile, []byte(token+"\n"), 0o600)
	netrc := filepath.Join(secrets, "netrc")
	os.WriteFile(netrc, []byte("machine 127.0.0.1 login alice password \"open sesame\"\n"), 0o600)
	noNetrc := filepath.Join(secrets, "absent")

	for _, tc := range []struct {
		name string
		env  string
		args []string
	}{
		{"userinfo", "", []string{"--netrc-file", noNetrc, "http://alice:open%20sesame@" + basicAddr + "/"}},
		{"netrc", "", []string{"--netrc-file", netrc, "http://" + basicAddr + "/"}},
		{"header", "", []string{"--netrc-file", noNetrc, "--header", "Authorization: Bearer " + token, "http://" + bearerAddr + "/"}},
		{"bearer-token-file", "", []string{"--netrc-file", noNetrc, "--bearer-token-file", tokenFile, "http://" + bearerAddr + "/"}},
		{"env", token, []string{"--netrc-file", noNetrc, "http://" + bearerAddr + "/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("RESOURCESYNC_BEARER_TOKEN", tc.env)
			dest := filepath.Join(t.TempDir(), "mirror")
			args := append([]string{"sync", "--progress", "quiet"}, tc.args...)
			code, out, errOut := runCLI(t, append(args, dest)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			for name, body := range files {
				if b, err := os.ReadFile(filepath.Join(dest, name)); string(b) != body {
					t.Errorf("%s = %q (%v)", name, b, err)
				}
			}
		})
	}

	t.Setenv("RESOURCESYNC_BEARER_TOKEN", "")
	for _, addr := range []string{basicAddr, bearerAddr} {
		dest := filepath.Join(t.TempDir(), "mirror")
		code, out, errOut := runCLI(t, "sync", "--progress", "quiet", "--netrc-file", noNetrc, "http://"+addr+"/", dest)
		if code != exitUsage || !strings.Contains(errOut, "Unauthorized (401)") || !strings.Contains(errOut, "no credentials given; give them with --header") {
			t.Errorf("%s without credentials: exit %d, want %d and a 401\n%s\n%s", addr, code, exitUsage, out, errOut)
		}
	}
}

// authSource serves handSource's documents and resources (a.txt
// redirected to redirectTo, c.txt's duplicate at dupAt) only to requests
// that carry credentials (any Authorization or X-Api-Key); others get 401
// and are counted in refused.
func authSource(t *testing.T, redirectTo, dupAt string, refused *atomic.Int64, capExtra string) string {
	t.Helper()
	var base string
	xml := func(body string) string {
		return `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">` +
			strings.ReplaceAll(body, "BASE", base) + "</urlset>\n"
	}
	docs := map[string]string{
		"/.well-known/resourcesync": `<rs:md capability="description"/><url><loc>BASE/cl.xml</loc><rs:md capability="capabilitylist"/></url>`,
		"/cl.xml":                   `<rs:ln rel="up" href="BASE/.well-known/resourcesync"/><rs:md capability="capabilitylist"/><url><loc>BASE/rl.xml</loc><rs:md capability="resourcelist"/></url>` + capExtra,
		"/rl.xml": `<rs:ln rel="up" href="BASE/cl.xml"/><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>` +
			`<url><loc>BASE/a.txt</loc></url><url><loc>BASE/b.txt</loc></url><url><loc>BASE/c.txt</loc><rs:ln rel="duplicate" href="` + dupAt + `" pri="1"/></url>`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization")+r.Header.Get("X-Api-Key") == "" {
			refused.Add(1)
			http.Error(w, "credentials needed", http.StatusUnauthorized)
			return
		}
		switch p := r.URL.Path; {
		case docs[p] != "":
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprint(w, xml(docs[p]))
		case p == "/a.txt":
			http.Redirect(w, r, redirectTo, http.StatusFound)
		case p == "/b.txt":
			fmt.Fprint(w, "bee")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	base = srv.URL
	return base + "/"
}

// TestSyncCredentialsStayHome: a resource redirected to another origin and
// one found only at a rel="duplicate" there are fetched when --allow-host
// allows that origin, but the credentials, in every form, are not sent
// there; the Source gets them on every request (it refuses any without).
func TestSyncCredentialsStayHome(t *testing.T) {
	syncLoopbackOnly(t)
	var mu sync.Mutex
	var seenOther []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seenOther = append(seenOther, r.URL.Path+" "+r.Header.Get("Authorization")+r.Header.Get("X-Api-Key"))
		mu.Unlock()
		fmt.Fprint(w, "from elsewhere")
	}))
	defer other.Close()
	var refused atomic.Int64
	base := authSource(t, other.URL+"/x", other.URL+"/copy", &refused, "")
	secrets := t.TempDir()
	tokenFile := filepath.Join(secrets, "token")
	os.WriteFile(tokenFile, []byte("tok-77\n"), 0o600)
	netrc := filepath.Join(secrets, "netrc")
	os.WriteFile(netrc, []byte("default login dl password dp\n"), 0o600)
	noNetrc := filepath.Join(secrets, "absent")
	allow := strings.TrimPrefix(other.URL, "http://")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"userinfo", []string{"--netrc-file", noNetrc, strings.Replace(base, "http://", "http://u:pw@", 1)}},
		{"netrc default", []string{"--netrc-file", netrc, base}},
		{"header", []string{"--netrc-file", noNetrc, "--header", "X-Api-Key: k-1", base}},
		{"bearer-token-file", []string{"--netrc-file", noNetrc, "--bearer-token-file", tokenFile, base}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			seenOther = nil
			mu.Unlock()
			refused.Store(0)
			dest := filepath.Join(t.TempDir(), "mirror")
			args := append([]string{"sync", "--progress", "quiet", "--allow-host", allow}, tc.args...)
			code, out, errOut := runCLI(t, append(args, dest)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			if n := refused.Load(); n != 0 {
				t.Errorf("%d requests reached the Source without credentials", n)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seenOther) < 2 {
				t.Fatalf("the other origin got %v", seenOther)
			}
			for _, s := range seenOther {
				if _, cred, _ := strings.Cut(s, " "); cred != "" {
					t.Errorf("the other origin got credentials: %q", s)
				}
			}
			for _, f := range []string{"a.txt", "c.txt"} {
				if b, _ := os.ReadFile(filepath.Join(dest, f)); string(b) != "from elsewhere" {
					t.Errorf("%s = %q", f, b)
				}
			}
		})
	}
}

// TestFollowHubOtherOrigin: sync --follow's subscription and
// unsubscription requests go to a hub on another origin without the
// Source's credentials.
func TestFollowHubOtherOrigin(t *testing.T) {
	syncLoopbackOnly(t)
	var mu sync.Mutex
	var hubSaw []string
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		hubSaw = append(hubSaw, r.PostForm.Get("hub.mode")+" "+r.Header.Get("Authorization")+r.Header.Get("X-Api-Key"))
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		// Verify the intent, as a hub does.
		q := url.Values{"hub.mode": {r.PostForm.Get("hub.mode")}, "hub.topic": {r.PostForm.Get("hub.topic")},
			"hub.challenge": {"ch-1"}, "hub.lease_seconds": {"3600"}}
		go func(cb string) {
			if resp, err := http.Get(cb + "?" + q.Encode()); err == nil {
				resp.Body.Close()
			}
		}(r.PostForm.Get("hub.callback"))
	}))
	defer hub.Close()
	var refused atomic.Int64
	base := authSource(t, "/b.txt", "/b.txt", &refused,
		`<url><loc>BASE/notify/default</loc><rs:ln rel="hub" href="`+hub.URL+`/"/><rs:md capability="change-notification"/></url>`)
	secrets := t.TempDir()
	tokenFile := filepath.Join(secrets, "token")
	os.WriteFile(tokenFile, []byte("tok-88\n"), 0o600)
	out, stop := background(t, "sync", "--follow", "--listen", loopbackAddr(t), "--poll-interval", "1h",
		"--netrc-file", filepath.Join(secrets, "absent"), "--bearer-token-file", tokenFile, "--header", "X-Api-Key: k-2",
		strings.Replace(base, "http://", "http://u:pw@", 1), t.TempDir())
	waitFor(t, "the subscription request", 15*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(hubSaw) > 0
	})
	stop()
	mu.Lock()
	defer mu.Unlock()
	modes := ""
	for _, s := range hubSaw {
		mode, cred, _ := strings.Cut(s, " ")
		modes += mode + ","
		if cred != "" {
			t.Errorf("the hub got credentials with %s: %q", mode, cred)
		}
	}
	if !strings.Contains(modes, "subscribe,") || !strings.Contains(modes, "unsubscribe,") {
		t.Errorf("hub requests %q\n%s", modes, out)
	}
	if n := refused.Load(); n != 0 {
		t.Errorf("%d requests reached the Source without credentials\n%s", n, out)
	}
	if strings.Contains(out.String(), "pw@") || strings.Contains(out.String(), "tok-88") {
		t.Errorf("follow printed a secret:\n%s", out)
	}
}
