package httpclient

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// recorder is a loopback server that records the Authorization and
// X-Api-Key headers of each request by path.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string]string
}

func newRecorder(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *recorder {
	rec := &recorder{seen: map[string]string{}}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen[r.URL.Path] = r.Header.Get("Authorization") + "|" + r.Header.Get("X-Api-Key")
		rec.mu.Unlock()
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (r *recorder) got(path string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[path]
}

func basicOf(u, p string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p))
}

// TestPerOrigin: credentials of the Source origin go with every request to
// it (each hop of a same-origin redirect) and never to another origin,
// whichever form they were given in; a .netrc machine entry goes to its host.
func TestPerOrigin(t *testing.T) {
	other := newRecorder(t, nil) // 127.0.0.1, another port
	src := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hop":
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/away":
			http.Redirect(w, r, other.URL+"/landed", http.StatusFound)
		}
	})
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte("tok-123\n"), 0o600)
	netrc := filepath.Join(dir, "netrc")
	// "localhost" names the other server's host only when reached as localhost.
	os.WriteFile(netrc, []byte("machine localhost login nl password np\ndefault login dl password dp\n"), 0o600)

	for _, tc := range []struct {
		name   string
		opt    Options
		userAt bool
		want   string
	}{
		{"userinfo", Options{}, true, basicOf("u", "pw") + "|"},
		{"bearer file", Options{BearerTokenFile: tokenFile}, false, "Bearer tok-123|"},
		{"bearer env", Options{BearerToken: "env-tok\n"}, false, "Bearer env-tok|"},
		{"header", Options{Headers: []string{"X-Api-Key: k1"}}, false, "|k1"},
		{"netrc default", Options{NetrcFile: netrc}, false, basicOf("dl", "dp") + "|"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			start := src.URL + "/hop"
			if tc.userAt {
				start = strings.Replace(start, "http://", "http://u:pw@", 1)
			}
			clean := a.Source(start)
			if strings.Contains(clean, "pw") {
				t.Fatalf("Source kept the password: %s", clean)
			}
			c, err := a.Client(&http.Client{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{clean, src.URL + "/away"} {
				resp, err := c.Get(p)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			for _, p := range []string{"/hop", "/final", "/away"} {
				if got := src.got(p); got != tc.want {
					t.Errorf("source %s got %q, want %q", p, got, tc.want)
				}
			}
			if got := other.got("/landed"); got != "|" {
				t.Errorf("the other origin got credentials %q", got)
			}
		})
	}

	// A .netrc machine entry names its host explicitly: it goes there even
	// when that host is not the Source's.
	a, _ := New(Options{NetrcFile: netrc})
	a.Source(src.URL)
	c, _ := a.Client(&http.Client{})
	lh := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	resp, err := c.Get(lh + "/named")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := other.got("/named"); got != basicOf("nl", "np")+"|" {
		t.Errorf("netrc machine entry: got %q", got)
	}
}

func TestNewErrors(t *testing.T) {
	for _, o := range []Options{
		{Headers: []string{"no colon"}},
		{Headers: []string{"Bad Name: x"}},
		{BearerTokenFile: "/nonexistent/token"},
		{CACertFile: "/nonexistent/ca.pem"},
		{BearerToken: "a\nb"},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestRedact(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte("opaque-token-value"), 0o600)
	a, err := New(Options{BearerTokenFile: tokenFile, Headers: []string{"X-Api-Key: hdr-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	a.Source("http://u:userinfo-secret@127.0.0.1:1/")
	got := a.Redact("opaque-token-value hdr-secret userinfo-secret http://h/?api_key=q")
	for _, s := range []string{"opaque-token-value", "hdr-secret", "userinfo-secret", "api_key=q"} {
		if strings.Contains(got, s) {
			t.Errorf("Redact kept %q: %s", s, got)
		}
	}
}

// TestRefererNotAcrossOrigins: a token in the Source URL's query does not
// reach another origin in the Referer net/http sets on a redirect; a
// same-origin hop keeps it.
func TestRefererNotAcrossOrigins(t *testing.T) {
	var mu sync.Mutex
	refs := map[string]string{}
	note := func(r *http.Request) {
		mu.Lock()
		refs[r.URL.Path] = r.Referer()
		mu.Unlock()
	}
	other := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { note(r) })
	src := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		note(r)
		switch r.URL.Path {
		case "/cl.xml":
			http.Redirect(w, r, "/hop", http.StatusFound)
		case "/hop":
			http.Redirect(w, r, other.URL+"/landed", http.StatusFound)
		}
	})
	a, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := a.Client(&http.Client{})
	resp, err := c.Get(a.Source(src.URL + "/cl.xml?access_token=SEKRIT-1234"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(refs["/hop"], "SEKRIT") {
		t.Errorf("same origin: Referer %q, want the Source URL", refs["/hop"])
	}
	if got := refs["/landed"]; got != "" {
		t.Errorf("the other origin got Referer %q", got)
	}
}

// TestSourceSecretsOfBadURLs: a password in a URL that does not parse
// (written unencoded) and a token given as the user name alone are
// redacted from whatever prints them.
func TestSourceSecretsOfBadURLs(t *testing.T) {
	for _, tc := range []struct{ raw, secret string }{
		{"http://u:se cret@127.0.0.1:1/", "se cret"},
		{"http://u:pa/ss#1@127.0.0.1:1/", "pa/ss#1"},
		{"https://ghp_tok3n@127.0.0.1:1/", "ghp_tok3n"},
	} {
		a, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		clean := a.Source(tc.raw)
		msg := a.Redact(fmt.Sprintf("fetch %s: parse %q: net/url: invalid userinfo", tc.raw, clean))
		if strings.Contains(msg, tc.secret) {
			t.Errorf("%s: %s", tc.raw, msg)
		}
	}
}

// TestHeaderErrorQuotesNoValue: a --header without its colon is all value
// to the user; the error does not print it.
func TestHeaderErrorQuotesNoValue(t *testing.T) {
	for _, h := range []string{"X-Api-Key abc123secret", "X-Api-Key=abc123secret", "X-Api-Key abc123secret: x"} {
		_, err := New(Options{Headers: []string{"Accept: */*", h}})
		if err == nil || strings.Contains(err.Error(), "abc123secret") {
			t.Errorf("%q: %v", h, err)
		}
	}
}

// TestBearerTokenFileTrimmed: a token file as a Windows editor writes it
// (a BOM, CRLF, a trailing space) sends the token alone.
func TestBearerTokenFileTrimmed(t *testing.T) {
	src := newRecorder(t, nil)
	f := filepath.Join(t.TempDir(), "token")
	os.WriteFile(f, []byte("\uFEFFtok-9 \r\n"), 0o600)
	a, err := New(Options{BearerTokenFile: f})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := a.Client(&http.Client{})
	resp, err := c.Get(a.Source(src.URL + "/x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := src.got("/x"); got != "Bearer tok-9|" {
		t.Errorf("sent %q", got)
	}
}

// TestNotTLS: an https:// URL of a plain HTTP server fails with a
// permanent error (no retry can fix it) that says to use http://.
func TestNotTLS(t *testing.T) {
	src := newRecorder(t, nil)
	a, _ := New(Options{})
	c, _ := a.Client(&http.Client{})
	_, err := c.Get(strings.Replace(src.URL, "http://", "https://", 1) + "/x")
	var p interface{ Permanent() bool }
	if err == nil || !errors.As(err, &p) || !p.Permanent() || !strings.Contains(err.Error(), "http://") {
		t.Errorf("got %v", err)
	}
	// A TCP service that is not HTTP either.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(conn, "SSH-2.0-OpenSSH_9.2\r\n")
			conn.Close()
		}
	}()
	_, err = c.Get("https://" + ln.Addr().String() + "/")
	if err == nil || !errors.As(err, &p) || !p.Permanent() {
		t.Errorf("not TLS, not HTTP: got %v", err)
	}
}
