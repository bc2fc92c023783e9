package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/internal/testing/webtest"
	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/boltstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/memstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/pgstore"
)

const (
	adminToken = "s3cret-admin-token"
	browserAcc = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	hostile    = `"><img src=x onerror=alert(1)>`
)

// adminReq makes a request to the admin handler as a browser's navigation
// on http://example.com would (Fetch Metadata of a navigation,
// Sec-Fetch-Site same-origin for posts): the pages are HTML only to a
// navigation (web.WantsHTML).
func adminReq(method, target string, form url.Values, cookie *http.Cookie) *http.Request {
	var r *http.Request
	if form != nil {
		r = httptest.NewRequest(method, target, strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		r = httptest.NewRequest(method, target, nil)
	}
	r.Header.Set("Accept", browserAcc)
	r.Header.Set("Sec-Fetch-Dest", "document")
	r.Header.Set("Sec-Fetch-Mode", "navigate")
	r.Header.Set("Upgrade-Insecure-Requests", "1")
	if method == http.MethodPost {
		r.Header.Set("Sec-Fetch-Site", "same-origin")
		r.Header.Set("Origin", "http://example.com")
	}
	if cookie != nil {
		r.AddCookie(cookie)
	}
	return r
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// login logs in and returns the session cookie and the CSRF token of the
// overview page.
func login(t *testing.T, admin http.Handler) (*http.Cookie, string) {
	t.Helper()
	rec := serve(admin, adminReq(http.MethodPost, "/admin/login", url.Values{"token": {adminToken}}, nil))
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/admin/" {
		t.Fatalf("login: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	cs := rec.Result().Cookies()
	if len(cs) != 1 {
		t.Fatalf("cookies: %v", cs)
	}
	rec = serve(admin, adminReq(http.MethodGet, "/admin/", nil, cs[0]))
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(rec.Body.String())
	if rec.Code != 200 || m == nil {
		t.Fatalf("overview after login: %d %s", rec.Code, rec.Body)
	}
	return cs[0], m[1]
}

// adminStores are the backends the admin read methods are checked on.
var adminStores = []struct {
	name string
	open func(t *testing.T) hubstore.Store
}{
	{"memstore", func(t *testing.T) hubstore.Store { return memstore.New(nil).Open() }},
	{"boltstore", func(t *testing.T) hubstore.Store {
		st, err := boltstore.Open(filepath.Join(t.TempDir(), "hub.db"), &boltstore.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
	{"pgstore", func(t *testing.T) hubstore.Store {
		pgtest.Skip(t)
		st, err := pgstore.Open(context.Background(), pgtest.Database(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
}

// openHub opens a hub on a memory store without running it (the tests
// write the store directly).
func openHub(t *testing.T) (*Hub, hubstore.Store) {
	return openHubOn(t, memstore.New(nil).Open())
}

func openHubOn(t *testing.T, st hubstore.Store) (*Hub, hubstore.Store) {
	t.Helper()
	cfg := fastConfig("")
	cfg.Store = st
	cfg.URL = "http://127.0.0.1:1/hub"
	h, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); st.Close() })
	return h, st
}

func TestAdminLoginSessionCookie(t *testing.T) {
	h, _ := openHub(t)
	admin := h.Admin(AdminOptions{Token: adminToken, FailedLoginDelay: 50 * time.Millisecond})

	// Without a session: the login form, its field labelled.
	rec := serve(admin, adminReq(http.MethodGet, "/admin/", nil, nil))
	body := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(body, `<label for="token">Admin token</label>`) || !strings.Contains(body, `id="token" name="token" type="password"`) {
		t.Fatalf("login page: %d %s", rec.Code, body)
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP %q", csp)
	}
	// Another page without a session sends a browser to the form, a tool
	// gets 401.
	rec = serve(admin, adminReq(http.MethodGet, "/admin/subscriptions", nil, nil))
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/admin/" {
		t.Errorf("subscriptions without a session: %d %v", rec.Code, rec.Header())
	}
	rec = serve(admin, httptest.NewRequest(http.MethodGet, "/admin/dead-letters", nil))
	if rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") == "" {
		t.Errorf("dead-letters without a token: %d", rec.Code)
	}

	// A wrong token: 401, slowed, no cookie.
	start := time.Now()
	rec = serve(admin, adminReq(http.MethodPost, "/admin/login", url.Values{"token": {"wrong"}}, nil))
	if rec.Code != http.StatusUnauthorized || len(rec.Result().Cookies()) != 0 || !strings.Contains(rec.Body.String(), "Wrong admin token") {
		t.Errorf("bad login: %d %v", rec.Code, rec.Result().Cookies())
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("a failed login took only %v", d)
	}

	// The right token: a session cookie that is not the token.
	rec = serve(admin, adminReq(http.MethodPost, "/admin/login", url.Values{"token": {adminToken}}, nil))
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("login: %d %s", rec.Code, rec.Body)
	}
	sc := rec.Header().Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/admin/"} {
		if !strings.Contains(sc, want) {
			t.Errorf("Set-Cookie %q lacks %s", sc, want)
		}
	}
	if strings.Contains(sc, "Secure") {
		t.Errorf("Secure cookie over plain HTTP (the browser would drop it): %q", sc)
	}
	c := rec.Result().Cookies()[0]
	if c.Value == adminToken || strings.Contains(c.Value, adminToken) || len(c.Value) < 32 {
		t.Errorf("cookie value %q is (or holds) the token or is short", c.Value)
	}
	// Over TLS the cookie is Secure.
	r := adminReq(http.MethodPost, "https://example.com/admin/login", url.Values{"token": {adminToken}}, nil)
	r.Header.Set("Origin", "https://example.com")
	rec = serve(admin, r)
	if sc := rec.Header().Get("Set-Cookie"); rec.Code != http.StatusSeeOther || !strings.Contains(sc, "Secure") {
		t.Errorf("login over TLS: %d Set-Cookie %q", rec.Code, sc)
	}

	// Behind a reverse proxy that terminates TLS, too.
	r = adminReq(http.MethodPost, "/admin/login", url.Values{"token": {adminToken}}, nil)
	r.Header.Set("X-Forwarded-Proto", "https")
	if sc := serve(admin, r).Header().Get("Set-Cookie"); !strings.Contains(sc, "Secure") {
		t.Errorf("login behind a TLS proxy: Set-Cookie %q", sc)
	}

	// The session opens the pages; a made-up cookie does not.
	rec = serve(admin, adminReq(http.MethodGet, "/admin/subscriptions", nil, c))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "<h1>Subscriptions</h1>") {
		t.Errorf("subscriptions with the session: %d", rec.Code)
	}
	rec = serve(admin, adminReq(http.MethodGet, "/admin/subscriptions", nil, &http.Cookie{Name: c.Name, Value: adminToken}))
	if rec.Code != http.StatusSeeOther {
		t.Errorf("the token as a cookie was taken: %d", rec.Code)
	}

	// Log out: the cookie is cleared and the session gone.
	_, csrf := login(t, admin)
	rec = serve(admin, adminReq(http.MethodGet, "/admin/", nil, c))
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(rec.Body.String())
	if m == nil || m[1] == csrf {
		t.Fatalf("per-session CSRF token: %v", m)
	}
	rec = serve(admin, adminReq(http.MethodPost, "/admin/logout", url.Values{"csrf": {m[1]}}, c))
	if rec.Code != http.StatusSeeOther || !strings.Contains(rec.Header().Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("logout: %d %v", rec.Code, rec.Header())
	}
	rec = serve(admin, adminReq(http.MethodGet, "/admin/subscriptions", nil, c))
	if rec.Code != http.StatusSeeOther {
		t.Errorf("the session outlived the logout: %d", rec.Code)
	}
}

func TestAdminFailedLoginsLimited(t *testing.T) {
	h, _ := openHub(t)
	admin := h.Admin(AdminOptions{Token: adminToken, FailedLoginDelay: time.Millisecond})
	codes := map[int]int{}
	for range 15 {
		codes[serve(admin, adminReq(http.MethodPost, "/admin/login", url.Values{"token": {"guess"}}, nil)).Code]++
	}
	if codes[http.StatusTooManyRequests] == 0 || codes[http.StatusUnauthorized] > 11 {
		t.Errorf("15 quick failed logins: %v", codes)
	}
}

func TestAdminRefusesCrossOriginPosts(t *testing.T) {
	h, _ := openHub(t)
	admin := h.Admin(AdminOptions{Token: adminToken})
	c, csrf := login(t, admin)
	cross := func(path string, form url.Values, hdr map[string]string) int {
		r := adminReq(http.MethodPost, path, form, c)
		r.Header.Del("Sec-Fetch-Site")
		r.Header.Del("Origin")
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		return serve(admin, r).Code
	}
	for _, hdr := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"},
		{"Sec-Fetch-Site": "same-site", "Origin": "http://sub.example.com"},
		{"Origin": "http://evil.example"}, // an older browser: Origin only
	} {
		for _, path := range []string{"/admin/replay", "/admin/logout"} {
			if code := cross(path, url.Values{"csrf": {csrf}, "id": {"1"}}, hdr); code != http.StatusForbidden {
				t.Errorf("cross-origin POST %s %v: %d, want 403", path, hdr, code)
			}
		}
		if code := cross("/admin/login", url.Values{"token": {adminToken}}, hdr); code != http.StatusForbidden {
			t.Errorf("cross-origin login %v: %d, want 403", hdr, code)
		}
	}
	// Same origin but without (or with a wrong) CSRF token.
	for _, form := range []url.Values{{"id": {"1"}}, {"id": {"1"}, "csrf": {"x" + csrf}}} {
		if code := serve(admin, adminReq(http.MethodPost, "/admin/replay", form, c)).Code; code != http.StatusForbidden {
			t.Errorf("replay without the CSRF token: %d", code)
		}
	}
	// The session survived all that.
	if code := serve(admin, adminReq(http.MethodGet, "/admin/dead-letters", nil, c)).Code; code != 200 {
		t.Errorf("session after refused posts: %d", code)
	}
}

func TestAdminBearerJSONUnchanged(t *testing.T) {
	h, st := openHub(t)
	ctx := context.Background()
	seedDeadLetter(t, st, "http://127.0.0.1:9/cb", "status 500")
	admin := h.Admin(AdminOptions{Token: adminToken})
	get := func(path, accept string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", "Bearer "+adminToken)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		return serve(admin, r)
	}
	// Java's HttpURLConnection names text/html first by default: a tool
	// written in Java gets the JSON too (web.WantsHTML).
	for _, acc := range []string{"", "*/*", "application/json", webtest.AcceptJava8, webtest.AcceptJava17} {
		rec := get("/admin/dead-letters", acc)
		var dl []DeadLetter
		if err := json.Unmarshal(rec.Body.Bytes(), &dl); rec.Code != 200 || err != nil || len(dl) != 1 || dl[0].Body != nil || dl[0].Seq != 1 {
			t.Errorf("bearer dead-letters (Accept %q): %d %v %s", acc, rec.Code, err, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
	}
	if rec := get("/admin/dead-letters?body=1", ""); !strings.Contains(rec.Body.String(), `"body": "PG9uZS8+"`) {
		t.Errorf("body=1: %s", rec.Body)
	}
	var s Stats
	if rec := get("/admin/stats", ""); json.Unmarshal(rec.Body.Bytes(), &s) != nil || s.DeadLetters != 1 || s.Subscriptions != 1 {
		t.Errorf("stats: %s", rec.Body)
	}
	r := httptest.NewRequest(http.MethodGet, "/admin/stats", nil)
	r.Header.Set("Authorization", "Bearer wrong")
	if rec := serve(admin, r); rec.Code != http.StatusUnauthorized {
		t.Errorf("wrong bearer: %d", rec.Code)
	}
	// A tool's replay needs no CSRF token (no cookie is involved): the
	// callback is down, so 502, as before.
	r = httptest.NewRequest(http.MethodPost, "/admin/replay?id=1", nil)
	r.Header.Set("Authorization", "Bearer "+adminToken)
	if rec := serve(admin, r); rec.Code != http.StatusBadGateway {
		t.Errorf("bearer replay to a dead callback: %d %s", rec.Code, rec.Body)
	}
	// The empty token refuses everything.
	if rec := serve(h.AdminHandler(""), adminReq(http.MethodPost, "/admin/login", url.Values{"token": {""}}, nil)); rec.Code != http.StatusUnauthorized {
		t.Errorf("empty token: %d", rec.Code)
	}
	_ = ctx
}

// seedDeadLetter stores a subscription to topicA with callback cb, a
// failing delivery state, 10 entries (cursor 3) and a dead letter.
func seedDeadLetter(t *testing.T, st hubstore.Store, cb, lastErr string) {
	t.Helper()
	ctx := context.Background()
	for i := range 10 {
		if _, err := st.Append(ctx, topicA, hubstore.Entry{Published: time.Now(), ContentType: "application/xml", Body: []byte(fmt.Sprintf("<n%d/>", i))}); err != nil {
			t.Fatal(err)
		}
	}
	key := subKey(topicA, cb)
	if err := st.PutSubscription(ctx, hubstore.Subscription{Key: key, Topic: topicA, Callback: cb, Lease: 3600,
		Expires: time.Now().Add(time.Hour), Cursor: 3, Attempt: 4, FirstFail: time.Now().Add(-time.Minute), LastError: lastErr}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, "seed", time.Minute, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddDeadLetter(ctx, "seed", hubstore.DeadLetter{Topic: topicA, Callback: cb, Seq: 1, Published: time.Now(),
		ContentType: "application/xml", Body: []byte("<one/>"), Attempts: 7, LastError: lastErr, At: time.Now()},
		hubstore.CursorUpdate{Key: key, Cursor: 3, Attempt: 4, FirstFail: time.Now().Add(-time.Minute), LastError: lastErr}); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, "seed"); err != nil {
		t.Fatal(err)
	}
}

func TestAdminPagesEscapeAndShowBacklog(t *testing.T) {
	for _, b := range adminStores {
		t.Run(b.name, func(t *testing.T) { testAdminPagesEscapeAndShowBacklog(t, b.open(t)) })
	}
}

func testAdminPagesEscapeAndShowBacklog(t *testing.T, store hubstore.Store) {
	h, st := openHubOn(t, store)
	cb := "http://127.0.0.1:9/cb?x=" + hostile
	seedDeadLetter(t, st, cb, "status 500: "+hostile)
	admin := h.Admin(AdminOptions{Token: adminToken})
	c, _ := login(t, admin)
	for _, path := range []string{"/admin/subscriptions", "/admin/dead-letters"} {
		rec := serve(admin, adminReq(http.MethodGet, path, nil, c))
		body := rec.Body.String()
		if rec.Code != 200 {
			t.Fatalf("%s: %d", path, rec.Code)
		}
		if strings.Contains(body, "<img") || strings.Contains(body, `"><`+"img") {
			t.Errorf("%s: the hostile markup is live:\n%s", path, body)
		}
		if !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;") {
			t.Errorf("%s: the hostile text is not shown escaped:\n%s", path, body)
		}
		if strings.Contains(body, "<script") || strings.Contains(body, `href="http://127.0.0.1:9`) {
			t.Errorf("%s: a script or a link to the callback", path)
		}
		if v := rec.Header().Get("Vary"); v != web.VaryHTML {
			t.Errorf("%s: Vary %q", path, v)
		}
	}
	// Backlog = head (10) − cursor (3), in the page and the JSON.
	body := serve(admin, adminReq(http.MethodGet, "/admin/subscriptions", nil, c)).Body.String()
	if !regexp.MustCompile(`<td class="num warn">7</td><td class="num">3</td><td class="num">10</td>`).MatchString(body) {
		t.Errorf("cursor/head/backlog 3/10/7 not shown:\n%s", body)
	}
	r := httptest.NewRequest(http.MethodGet, "/admin/subscriptions", nil)
	r.Header.Set("Authorization", "Bearer "+adminToken)
	var js struct {
		Total         int
		Subscriptions []SubscriptionState
	}
	if err := json.Unmarshal(serve(admin, r).Body.Bytes(), &js); err != nil || js.Total != 1 || js.Subscriptions[0].Backlog != 7 ||
		js.Subscriptions[0].Failures != 4 || js.Subscriptions[0].Callback != cb {
		t.Errorf("subscriptions JSON: %+v %v", js, err)
	}
}

// 10,000 subscribers make 50 pages of 200, on every backend (450 on
// PostgreSQL: one round trip per subscription written).
func TestAdminSubscriptionsPaged(t *testing.T) {
	for _, b := range adminStores {
		t.Run(b.name, func(t *testing.T) {
			n := 10000
			if b.name == "pgstore" {
				n = 450
			}
			testAdminSubscriptionsPaged(t, b.open(t), n)
		})
	}
}

func testAdminSubscriptionsPaged(t *testing.T, store hubstore.Store, n int) {
	h, st := openHubOn(t, store)
	ctx := context.Background()
	pages := (n + 199) / 200
	for i := range n {
		cb := "http://127.0.0.1:9/cb/" + strconv.Itoa(i)
		if err := st.PutSubscription(ctx, hubstore.Subscription{Key: subKey(topicA, cb), Topic: topicA, Callback: cb, Lease: 3600, Expires: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	admin := h.Admin(AdminOptions{Token: adminToken})
	c, _ := login(t, admin)
	seen := map[string]bool{}
	rowRE := regexp.MustCompile(`<td class="url">(http://127\.0\.0\.1:9/cb/\d+)</td>`)
	start := time.Now()
	rec := serve(admin, adminReq(http.MethodGet, "/admin/subscriptions", nil, c))
	first := time.Since(start)
	body := rec.Body.String()
	rows := rowRE.FindAllStringSubmatch(body, -1)
	if len(rows) != 200 || !strings.Contains(body, fmt.Sprintf("Page 1 of %d", pages)) || !strings.Contains(body, `href="subscriptions?page=2"`) {
		t.Fatalf("first page: %d rows, %d bytes", len(rows), len(body))
	}
	if len(body) > 200<<10 {
		t.Errorf("a page of 200 subscriptions is %d bytes", len(body))
	}
	t.Logf("%d subscriptions: page 1 in %v, %d bytes", n, first, len(body))
	for _, p := range []int{2, pages} {
		start := time.Now()
		body := serve(admin, adminReq(http.MethodGet, "/admin/subscriptions?page="+strconv.Itoa(p), nil, c)).Body.String()
		t.Logf("page %d in %v", p, time.Since(start))
		for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
			if seen[m[1]] {
				t.Errorf("page %d repeats %s", p, m[1])
			}
			seen[m[1]] = true
		}
	}
	if want := 200 + n - (pages-1)*200; len(seen) != want {
		t.Errorf("pages 2 and %d: %d distinct rows, want %d", pages, len(seen), want)
	}
	// The last page's rows, once more, by JSON: the figures agree.
	r := httptest.NewRequest(http.MethodGet, "/admin/subscriptions?page="+strconv.Itoa(pages), nil)
	r.Header.Set("Authorization", "Bearer "+adminToken)
	var js struct {
		Total         int
		Subscriptions []SubscriptionState
	}
	if err := json.Unmarshal(serve(admin, r).Body.Bytes(), &js); err != nil || js.Total != n || len(js.Subscriptions) != n-(pages-1)*200 {
		t.Errorf("last page JSON: total %d, %d rows, %v", js.Total, len(js.Subscriptions), err)
	}
}

// The replay form on a running hub: a dead letter is replayed to the
// recovered callback, the outcome shown after the redirect.
func TestAdminReplayForm(t *testing.T) {
	th := newTestHub(t, func(c *Config) { c.GiveUpAfter = 200 * time.Millisecond })
	sub := newSubscriber(t)
	var failing atomic.Bool
	failing.Store(true)
	sub.status = func(_ int, d delivery) int {
		if failing.Load() {
			return 500
		}
		return 204
	}
	th.subscribe(t, topicA, sub.url("/cb"), nil)
	th.mustPublish(t, topicA, "<one/>")
	waitFor(t, 5*time.Second, "a dead letter", func() bool { return th.Stats().DeadLetters == 1 })
	admin := th.Admin(AdminOptions{Token: adminToken})
	c, csrf := login(t, admin)
	body := serve(admin, adminReq(http.MethodGet, "/admin/dead-letters", nil, c)).Body.String()
	m := regexp.MustCompile(`name="id" value="(\d+)"`).FindStringSubmatch(body)
	if m == nil || !strings.Contains(body, "answered 500") {
		t.Fatalf("dead letters page:\n%s", body)
	}
	// Still failing: the failure is shown.
	rec := serve(admin, adminReq(http.MethodPost, "/admin/replay", url.Values{"csrf": {csrf}, "id": {m[1]}}, c))
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/admin/dead-letters" {
		t.Fatalf("replay: %d %v", rec.Code, rec.Header())
	}
	body = serve(admin, adminReq(http.MethodGet, "/admin/dead-letters", nil, c)).Body.String()
	if !strings.Contains(body, "Replay of dead letter "+m[1]+" failed") || !strings.Contains(body, `name="id" value="`+m[1]+`"`) {
		t.Errorf("after a failed replay:\n%s", body)
	}
	failing.Store(false)
	serve(admin, adminReq(http.MethodPost, "/admin/replay", url.Values{"csrf": {csrf}, "id": {m[1]}}, c))
	body = serve(admin, adminReq(http.MethodGet, "/admin/dead-letters", nil, c)).Body.String()
	if !strings.Contains(body, "Dead letter "+m[1]+" replayed: delivered.") || strings.Contains(body, `name="id"`) {
		t.Errorf("after the replay:\n%s", body)
	}
	if d := sub.deliveries(); len(d) != 1 || d[0].Body != "<one/>" {
		t.Errorf("deliveries: %+v", d)
	}
	// The message is shown once.
	if body := serve(admin, adminReq(http.MethodGet, "/admin/dead-letters", nil, c)).Body.String(); strings.Contains(body, "replayed: delivered") {
		t.Error("the replay message is shown twice")
	}
}

func TestAdminDeadLettersPaged(t *testing.T) {
	h, st := openHub(t)
	ctx := context.Background()
	cb := "http://127.0.0.1:9/cb"
	key := subKey(topicA, cb)
	if err := st.PutSubscription(ctx, hubstore.Subscription{Key: key, Topic: topicA, Callback: cb, Lease: 3600, Expires: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, "seed", time.Minute, 10); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 12; i++ {
		if _, err := st.AddDeadLetter(ctx, "seed", hubstore.DeadLetter{Topic: topicA, Callback: cb, Seq: uint64(i), Body: []byte("x"), LastError: "e"},
			hubstore.CursorUpdate{Key: key, Cursor: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	admin := h.Admin(AdminOptions{Token: adminToken, PageSize: 5})
	c, _ := login(t, admin)
	idRE := regexp.MustCompile(`name="id" value="(\d+)"`)
	var all []string
	for p := 1; p <= 3; p++ {
		body := serve(admin, adminReq(http.MethodGet, "/admin/dead-letters?page="+strconv.Itoa(p), nil, c)).Body.String()
		if !strings.Contains(body, fmt.Sprintf("Page %d of 3", p)) {
			t.Errorf("page %d: no pager", p)
		}
		for _, m := range idRE.FindAllStringSubmatch(body, -1) {
			all = append(all, m[1])
		}
		if p == 2 && !strings.Contains(body, `<input type="hidden" name="page" value="2">`) {
			t.Error("the replay form does not return to its page")
		}
	}
	if strings.Join(all, ",") != "1,2,3,4,5,6,7,8,9,10,11,12" {
		t.Errorf("dead letters over 3 pages: %v", all)
	}
}
