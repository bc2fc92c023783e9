package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v3"
)

// TestSystemdUnits: the example units in docs/systemd name flags the
// commands have (parsed by the real command tree, nothing run), and
// systemd-analyze finds nothing to complain about when it is installed.
func TestSystemdUnits(t *testing.T) {
	units, _ := filepath.Glob(filepath.Join("..", "..", "docs", "systemd", "*.service"))
	if len(units) < 3 {
		t.Fatalf("%d units in docs/systemd, want serve, hub and sync --follow", len(units))
	}
	tmp := t.TempDir()
	var cmds []string
	for _, u := range units {
		b, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "\\\n", " ")
		m := regexp.MustCompile(`(?m)^ExecStart=/usr/local/bin/resourcesync (.*)$`).FindStringSubmatch(text)
		if m == nil {
			t.Errorf("%s: no ExecStart=/usr/local/bin/resourcesync", u)
			continue
		}
		args := strings.Fields(m[1])
		cmds = append(cmds, args[0])
		var ran string
		app := newApp(io.Discard, io.Discard)
		walkCommands(app, func(_ []string, c *cli.Command) {
			if c.Action != nil {
				c.Action = func(_ context.Context, c *cli.Command) error { ran = c.Name; return nil }
			}
		})
		if err := app.Run(context.Background(), append([]string{"resourcesync"}, args...)); err != nil || ran != args[0] {
			t.Errorf("%s: ExecStart %q: %v", u, args, err)
		}
		for _, want := range []string{"EnvironmentFile=", "NoNewPrivileges=yes", "ProtectSystem=strict", "RestartPreventExitStatus=2"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %s", u, want)
			}
		}
		// For systemd-analyze: a binary that exists in place of the installed one.
		os.WriteFile(filepath.Join(tmp, filepath.Base(u)), []byte(strings.ReplaceAll(string(b), "/usr/local/bin/resourcesync", "/bin/true")), 0o644)
	}
	if got := strings.Join(cmds, " "); !strings.Contains(got, "serve") || !strings.Contains(got, "hub") || !strings.Contains(got, "sync") {
		t.Errorf("units run %q, want serve, hub and sync", got)
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Log("no systemd-analyze: the units' syntax is not checked")
		return
	}
	files, _ := filepath.Glob(filepath.Join(tmp, "*.service"))
	c := exec.Command("systemd-analyze", append([]string{"verify"}, files...)...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Run(); err != nil || stderr.Len() > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, stderr.String())
	}
}

// TestPublishNginx: the nginx server block of docs/publish-nginx.md, run by
// Debian's nginx on loopback over the output of publish, is a Source that
// validates and mirrors, and serves neither hidden files nor the state.
func TestPublishNginx(t *testing.T) {
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		nginx = "/usr/sbin/nginx"
		if _, err := os.Stat(nginx); err != nil {
			t.Skip("no nginx (scripts/test.sh installs it)")
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "publish-nginx.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```nginx\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("no nginx block in docs/publish-nginx.md")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base := "http://" + addr + "/"

	dir, out, prefix := t.TempDir(), t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub dir"), 0o755)
	for name, body := range map[string]string{"a.txt": "a", "sub dir/b.xml": "<b/>", "c.html": "<p>c</p>", ".hidden": "secret"} {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	if code, stdout, stderr := runCLI(t, "publish", "--base-url", base, "--out", out, dir); code != 0 {
		t.Fatalf("publish: exit %d\n%s%s", code, stdout, stderr)
	}
	server := strings.NewReplacer("listen 80;", "listen "+addr+";", "/srv/collection", dir, "/srv/resourcesync-out", out).Replace(string(m[1]))
	conf := fmt.Sprintf(`daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
%[2]s
events { worker_connections 64; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
%[3]s
}
`, prefix, map[bool]string{true: "user root;"}[os.Geteuid() == 0], server)
	os.WriteFile(filepath.Join(prefix, "nginx.conf"), []byte(conf), 0o644)
	cmd := exec.Command(nginx, "-p", prefix, "-c", filepath.Join(prefix, "nginx.conf"))
	// A file, not a pipe: the workers hold it open, and Wait would wait for them.
	logs, err := os.Create(filepath.Join(prefix, "stdout.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// SIGINT: nginx's fast shutdown, the workers with it (Kill would
		// orphan them).
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("nginx did not stop on SIGINT")
		}
	})
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path string) (int, string) {
		resp, err := client.Get(base + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type") + " " + string(b)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, _ := get("a.txt"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			el, _ := os.ReadFile(filepath.Join(prefix, "error.log"))
			so, _ := os.ReadFile(logs.Name())
			t.Fatalf("nginx does not answer\n%s\n%s", so, el)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := get(".well-known/resourcesync"); code != 200 || !strings.HasPrefix(body, "application/xml <?xml") {
		t.Errorf("Source Description: %d %.100q", code, body)
	}
	// A browser's navigation gets the HTML page; a program (Java's
	// default Accept included) the XML, from the same URL.
	for _, p := range []string{".well-known/resourcesync", ".resourcesync/default/resourcelist.xml", ".resourcesync/default/capabilitylist.xml"} {
		for _, nav := range []bool{false, true} {
			req, _ := http.NewRequest("GET", base+p, nil)
			req.Header.Set("Accept", "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2")
			if nav {
				req.Header.Set("Sec-Fetch-Mode", "navigate")
				req.Header.Set("Sec-Fetch-Dest", "document")
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			html := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") && strings.Contains(string(b), "<html")
			if resp.StatusCode != 200 || html != nav || !strings.Contains(resp.Header.Get("Vary"), "Sec-Fetch-Mode") {
				t.Errorf("%s (navigation %v): %d %s Vary %q html %v", p, nav, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Vary"), html)
			}
		}
	}
	for _, p := range []string{".hidden", ".resourcesync/default/state.db", "sub%20dir/.x"} {
		if code, body := get(p); code != 404 {
			t.Errorf("%s: %d %.100q, want 404", p, code, body)
		}
	}
	if code, stdout, stderr := runCLI(t, "validate", base); code != 0 {
		t.Errorf("validate %s: exit %d\n%s%s", base, code, stdout, stderr)
	}
	mirror := filepath.Join(t.TempDir(), "mirror")
	if code, stdout, stderr := runCLI(t, "sync", "-q", base, mirror); code != 0 {
		t.Fatalf("sync: exit %d\n%s%s", code, stdout, stderr)
	}
	for name, want := range map[string]string{"a.txt": "a", "sub dir/b.xml": "<b/>", "c.html": "<p>c</p>"} {
		if b, err := os.ReadFile(filepath.Join(mirror, name)); err != nil || string(b) != want {
			t.Errorf("mirror %s: %q, %v", name, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(mirror, ".hidden")); err == nil {
		t.Error("the hidden file was mirrored")
	}
}
