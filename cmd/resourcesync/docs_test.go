package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
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
// validates and mirrors, serves neither hidden files nor the state, and
// gives HTML to a browser's navigation only.
func TestPublishNginx(t *testing.T) {
	nginx := findProgram(t, "nginx")
	block := docBlock(t, "nginx")
	addr := freeAddr(t)
	base := "http://" + addr + "/"
	dir, out, prefix := publishedTree(t, base)
	server := strings.NewReplacer("listen 80;", "listen "+addr+";", "/srv/collection", dir, "/srv/resourcesync-out", out).Replace(block)
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
	// SIGINT: nginx's fast shutdown, the workers with it.
	startServer(t, prefix, exec.Command(nginx, "-p", prefix, "-c", filepath.Join(prefix, "nginx.conf")))
	checkPublishedSite(t, base, dir, prefix)

	// The root redirects to the Source Description (a browser lands on
	// its page), rather than answering a bare 404.
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || !strings.HasSuffix(loc, "/.well-known/resourcesync") {
		t.Errorf("GET /: %d, Location %q; want 302 to the Source Description", resp.StatusCode, loc)
	}
}

// TestPublishApache: the same with the Apache block of the recipe, run by
// Debian's apache2.
func TestPublishApache(t *testing.T) {
	apache := findProgram(t, "apache2")
	block := docBlock(t, "apache")
	addr := freeAddr(t)
	base := "http://" + addr + "/"
	dir, out, prefix := publishedTree(t, base)
	vhost := strings.NewReplacer("<VirtualHost *:80>", "<VirtualHost "+addr+">", "/srv/collection", dir, "/srv/resourcesync-out", out).Replace(block)
	var mods strings.Builder
	for _, m := range []string{"mpm_event", "authz_core", "alias", "mime", "rewrite", "headers", "dir"} {
		fmt.Fprintf(&mods, "LoadModule %s_module /usr/lib/apache2/modules/mod_%s.so\n", m, m)
	}
	user := ""
	if os.Geteuid() == 0 {
		// Apache refuses to serve as root: its children run as nobody,
		// which must read the trees.
		user = "User nobody\nGroup nogroup\n"
		for _, d := range []string{dir, out, filepath.Dir(dir), filepath.Dir(out)} {
			os.Chmod(d, 0o755)
		}
	}
	conf := fmt.Sprintf(`ServerRoot %[1]s
PidFile %[1]s/httpd.pid
ErrorLog %[1]s/error.log
LogLevel warn
Listen %[2]s
ServerName localhost
%[3]s%[4]sTypesConfig /etc/mime.types
<Directory />
    Require all denied
    AllowOverride None
</Directory>
%[5]s
`, prefix, addr, mods.String(), user, vhost)
	os.WriteFile(filepath.Join(prefix, "httpd.conf"), []byte(conf), 0o644)
	// SIGINT: apache2's immediate stop (SIGTERM), children included.
	startServer(t, prefix, exec.Command(apache, "-f", filepath.Join(prefix, "httpd.conf"), "-DFOREGROUND"))
	checkPublishedSite(t, base, dir, prefix)
}

func findProgram(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := "/usr/sbin/" + name; fileExists(p) {
		return p
	}
	t.Skipf("no %s", name)
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// docBlock is the first ```lang block of docs/publish-nginx.md.
func docBlock(t *testing.T, lang string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "publish-nginx.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatalf("no %s block in docs/publish-nginx.md", lang)
	}
	return string(m[1])
}

// publishedTree is a collection DIR (with hidden files and the default
// state in DIR/.resourcesync) published for base into OUT; prefix is a
// directory for the server's files.
func publishedTree(t *testing.T, base string) (dir, out, prefix string) {
	t.Helper()
	dir, out, prefix = t.TempDir(), t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub dir"), 0o755)
	for name, body := range map[string]string{"a.txt": "a", "sub dir/b.xml": "<b/>", "c.html": "<p>c</p>", ".hidden": "secret", "sub dir/.x": "secret"} {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	if code, stdout, stderr := runCLI(t, "publish", "--base-url", base, "--out", out, dir); code != 0 {
		t.Fatalf("publish: exit %d\n%s%s", code, stdout, stderr)
	}
	return dir, out, prefix
}

// startServer starts cmd (its output in prefix/stdout.log: a file, not a
// pipe, which the workers would hold open) and stops it with SIGINT at the
// end of the test.
func startServer(t *testing.T, prefix string, cmd *exec.Cmd) {
	t.Helper()
	logs, err := os.Create(filepath.Join(prefix, "stdout.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("%s did not stop on SIGINT", cmd.Path)
		}
	})
}

// checkPublishedSite: the site at base is the Source publish described.
func checkPublishedSite(t *testing.T, base, dir, prefix string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path string, nav bool) (int, string, http.Header) {
		req, _ := http.NewRequest("GET", base+path, nil)
		// Java's default Accept: a program, whatever it claims to accept.
		req.Header.Set("Accept", "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2")
		if nav {
			req.Header.Set("Sec-Fetch-Mode", "navigate")
			req.Header.Set("Sec-Fetch-Dest", "document")
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error(), nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, _, _ := get("a.txt", false); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			el, _ := os.ReadFile(filepath.Join(prefix, "error.log"))
			so, _ := os.ReadFile(filepath.Join(prefix, "stdout.log"))
			t.Fatalf("the server does not answer\n%s\n%s", so, el)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body, h := get(".well-known/resourcesync", false); code != 200 || h.Get("Content-Type") != "application/xml" || !strings.HasPrefix(body, "<?xml") {
		t.Errorf("Source Description: %d %s %.100q", code, h.Get("Content-Type"), body)
	}
	// A browser's navigation gets the HTML page, a program the XML, from
	// the same URL.
	for _, p := range []string{".well-known/resourcesync", ".resourcesync/default/resourcelist.xml", ".resourcesync/default/capabilitylist.xml"} {
		for _, nav := range []bool{false, true} {
			code, body, h := get(p, nav)
			html := strings.HasPrefix(h.Get("Content-Type"), "text/html") && strings.Contains(body, "<html")
			if code != 200 || html != nav || !strings.Contains(h.Get("Vary"), "Sec-Fetch-Mode") {
				t.Errorf("%s (navigation %v): %d %s Vary %q html %v", p, nav, code, h.Get("Content-Type"), h.Get("Vary"), html)
			}
		}
	}
	if !fileExists(filepath.Join(dir, ".resourcesync")) {
		t.Fatal("no state in DIR/.resourcesync: the test below checks nothing")
	}
	for _, p := range []string{".hidden", "sub%20dir/.x", ".resourcesync/default/state.db", ".resourcesync/"} {
		if code, body, _ := get(p, false); code != 404 && code != 403 {
			t.Errorf("%s: %d %.100q, want 404 or 403", p, code, body)
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
	if fileExists(filepath.Join(mirror, ".hidden")) {
		t.Error("the hidden file was mirrored")
	}
}
