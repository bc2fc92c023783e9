package authn

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// htpasswdLine is a bcrypt htpasswd line made now, at the lowest cost.
func htpasswdLine(t testing.TB, user, pass string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	// htpasswd -B writes $2y$; Go's $2a$ is the same algorithm.
	return user + ":$2y$" + string(h[4:]) + "\n"
}

func write(t testing.TB, name, data string) string {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

// stopped is a Budget whose clock does not move: no token comes back by
// waiting, so the counts below do not depend on how fast the test runs.
func stopped() *Budget {
	b := NewBudget()
	at := time.Now()
	b.now = func() time.Time { return at }
	return b
}

func newServer(t *testing.T, cfg Config) (*Authenticator, *httptest.Server) {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "content") })
	srv := httptest.NewServer(a.Handler(ok, func(r *http.Request) bool { return r.URL.Path == "/healthz" }))
	t.Cleanup(srv.Close)
	return a, srv
}

func get(t *testing.T, url string, set func(*http.Request)) (*http.Response, string) {
	t.Helper()
	resp, body, err := try(url, set)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// try is get for other goroutines than the test's.
func try(url string, set func(*http.Request)) (*http.Response, string, error) {
	req, _ := http.NewRequest("GET", url, nil)
	if set != nil {
		set(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func bearer(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

func basic(u, p string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(u, p) }
}

// TestHandler: without or with wrong credentials 401 and the challenges,
// no secret echoed; a token of the file, the environment's, and a basic
// user get through; the open path needs nothing.
func TestHandler(t *testing.T) {
	dir := t.TempDir()
	tf := write(t, filepath.Join(dir, "tokens"), "# readers\ntok-one\n\n  tok-two  \n")
	bf := write(t, filepath.Join(dir, "htpasswd"), "# users\n"+htpasswdLine(t, "alice", "wonder land"))
	_, srv := newServer(t, Config{TokenFile: tf, Tokens: []string{"env-token"}, BasicFile: bf, Realm: "test", Budget: stopped()})
	for _, tc := range []struct {
		name   string
		set    func(*http.Request)
		path   string
		code   int
		bearer string // expected Bearer challenge, "" none checked
	}{
		{"none", nil, "/x", 401, `Bearer realm="test"`},
		{"wrong token", bearer("tok-three"), "/x", 401, `Bearer realm="test", error="invalid_token"`},
		{"token prefix", bearer("tok-on"), "/x", 401, `Bearer realm="test", error="invalid_token"`},
		{"wrong password", basic("alice", "wonderland"), "/x", 401, `Bearer realm="test"`},
		{"unknown user", basic("bob", "wonder land"), "/x", 401, `Bearer realm="test"`},
		{"other scheme", func(r *http.Request) { r.Header.Set("Authorization", "Digest x=y") }, "/x", 401, `Bearer realm="test"`},
		{"token", bearer("tok-one"), "/x", 200, ""},
		{"second token", bearer("tok-two"), "/x", 200, ""},
		{"env token", bearer("env-token"), "/x", 200, ""},
		{"lower-case scheme", func(r *http.Request) { r.Header.Set("Authorization", "bearer tok-one") }, "/x", 200, ""},
		{"basic", basic("alice", "wonder land"), "/x", 200, ""},
		{"healthz", nil, "/healthz", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(t, srv.URL+tc.path, tc.set)
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, tc.code, body)
			}
			if tc.code == 200 {
				if body != "content" {
					t.Errorf("body %q", body)
				}
				return
			}
			ch := resp.Header.Values("WWW-Authenticate")
			want := []string{tc.bearer, `Basic realm="test", charset="UTF-8"`}
			if strings.Join(ch, "|") != strings.Join(want, "|") {
				t.Errorf("WWW-Authenticate %q, want %q", ch, want)
			}
			for _, secret := range []string{"tok-", "wonder", "alice", "bob"} {
				if strings.Contains(body, secret) {
					t.Errorf("body %q echoes %q", body, secret)
				}
			}
		})
	}
}

// TestOnlyToken: with a token file alone, basic credentials are not
// checked and the challenge is Bearer only.
func TestOnlyToken(t *testing.T) {
	tf := write(t, filepath.Join(t.TempDir(), "tokens"), "s3cret\n")
	_, srv := newServer(t, Config{TokenFile: tf})
	resp, _ := get(t, srv.URL, basic("u", "s3cret"))
	if resp.StatusCode != 401 || strings.Join(resp.Header.Values("WWW-Authenticate"), "|") != `Bearer realm="resourcesync"` {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
	}
}

// TestNilAccepts: no credentials configured, no Authenticator, no check.
func TestNilAccepts(t *testing.T) {
	a, err := New(Config{})
	if a != nil || err != nil {
		t.Fatal(a, err)
	}
	rec := httptest.NewRecorder()
	a.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }), nil).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 204 {
		t.Fatal(rec.Code)
	}
}

// TestWrongPasswordFlood: 200 wrong passwords sent at once from one
// client cost at most the client's budget of bcrypt runs (10), never more
// than MaxBcrypt at once; the others are refused unchecked (429). A
// client whose credentials were verified before still gets through, and
// the right password is checked once however often it is sent.
func TestWrongPasswordFlood(t *testing.T) {
	bf := write(t, filepath.Join(t.TempDir(), "htpasswd"), htpasswdLine(t, "alice", "right"))
	a, srv := newServer(t, Config{BasicFile: bf, MaxBcrypt: 2, Budget: stopped()})
	if resp, _ := get(t, srv.URL, basic("alice", "right")); resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := range 200 {
		wg.Go(func() {
			resp, _, err := try(srv.URL, basic("alice", fmt.Sprint("guess", i)))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			codes[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if n := a.bcrypts.Load(); n > 1+10 {
		t.Errorf("%d bcrypt comparisons for 200 wrong passwords from one client, want at most 11", n)
	}
	if m := a.maxInFlight.Load(); m > 2 {
		t.Errorf("%d bcrypt comparisons at once, want at most MaxBcrypt 2", m)
	}
	if codes[401] != 10 || codes[429] != 190 {
		t.Errorf("answers %v, want 10 401s and 190 429s", codes)
	}
	before := a.bcrypts.Load()
	for range 5 {
		if resp, _ := get(t, srv.URL, basic("alice", "right")); resp.StatusCode != 200 {
			t.Fatalf("the known client is locked out: %d", resp.StatusCode)
		}
	}
	if n := a.bcrypts.Load() - before; n != 0 {
		t.Errorf("%d bcrypt comparisons for a remembered password", n)
	}
}

// TestManyClients: guessers on many addresses together get the shared
// budget (100) of checks and no more.
func TestManyClients(t *testing.T) {
	bf := write(t, filepath.Join(t.TempDir(), "htpasswd"), htpasswdLine(t, "alice", "right"))
	a, err := New(Config{BasicFile: bf, Budget: stopped()})
	if err != nil {
		t.Fatal(err)
	}
	h := a.Handler(http.NotFoundHandler(), nil)
	for i := range 500 {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = fmt.Sprintf("10.0.%d.%d:1234", i/250, i%250)
		r.SetBasicAuth("alice", "wrong")
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	if n := a.bcrypts.Load(); n != 100 {
		t.Errorf("%d bcrypt comparisons from 500 addresses, want the shared budget's 100", n)
	}
}

// TestReload: a token file replaced is read on the next request (and
// the old token no longer works); a file that no longer parses revokes
// the credentials it held (TestRevokeByEmptying); an htpasswd user added
// is accepted.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	tf := write(t, filepath.Join(dir, "tokens"), "old-token\n")
	bf := write(t, filepath.Join(dir, "htpasswd"), htpasswdLine(t, "alice", "a"))
	_, srv := newServer(t, Config{TokenFile: tf, BasicFile: bf, CheckEvery: -1})
	if resp, _ := get(t, srv.URL, bearer("old-token")); resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	// A rename, as editors and deployment tools replace a file.
	tmp := write(t, filepath.Join(dir, "tokens.new"), "new-token\n")
	if err := os.Rename(tmp, tf); err != nil {
		t.Fatal(err)
	}
	if resp, _ := get(t, srv.URL, bearer("new-token")); resp.StatusCode != 200 {
		t.Errorf("new token: %d", resp.StatusCode)
	}
	if resp, _ := get(t, srv.URL, bearer("old-token")); resp.StatusCode != 401 {
		t.Errorf("old token after the reload: %d", resp.StatusCode)
	}
	// Written in place, with a broken line: refused, and its tokens with
	// it (fail closed).
	write(t, tf, "new-token\nnot one token\n")
	os.Chtimes(tf, time.Now(), time.Now().Add(time.Hour))
	if resp, _ := get(t, srv.URL, bearer("new-token")); resp.StatusCode != 401 {
		t.Errorf("after a broken file: %d", resp.StatusCode)
	}
	write(t, bf, htpasswdLine(t, "alice", "a")+htpasswdLine(t, "bob", "b"))
	os.Chtimes(bf, time.Now(), time.Now().Add(2*time.Hour))
	if resp, _ := get(t, srv.URL, basic("bob", "b")); resp.StatusCode != 200 {
		t.Errorf("user added: %d", resp.StatusCode)
	}
}

// TestNewErrors: a file that does not parse is refused at start, naming
// the file and the line, never the secret.
func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"htpasswd MD5", Config{BasicFile: write(t, filepath.Join(dir, "md5"), "# x\nbob:$apr1$abc$defdefdefdefdefdefdefd\n")}, `line 2 (user "bob"): an MD5 ($apr1$) hash`},
		{"htpasswd SHA", Config{BasicFile: write(t, filepath.Join(dir, "sha"), "bob:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=\n")}, "SHA-1"},
		{"htpasswd plain", Config{BasicFile: write(t, filepath.Join(dir, "plain"), "bob:hunter2\n")}, "plain-text"},
		{"htpasswd empty", Config{BasicFile: write(t, filepath.Join(dir, "empty"), "# nobody\n")}, "no user"},
		{"token spaces", Config{TokenFile: write(t, filepath.Join(dir, "tok"), "good\nhunter 2\n")}, "line 2"},
		{"no token", Config{TokenFile: write(t, filepath.Join(dir, "notok"), "\n# none\n")}, "no token"},
		{"missing", Config{TokenFile: filepath.Join(dir, "nope")}, "nope"},
		{"env token", Config{Tokens: []string{"a b"}}, "one word"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter") {
				t.Errorf("err %v shows the secret", err)
			}
		})
	}
}
