package hub

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/authn"
	"github.com/resourcesync-go/resourcesync/internal/web"
)

// AdminOptions configures Admin.
type AdminOptions struct {
	// Token is the admin token; Admin refuses everything when it is empty.
	Token string
	// MetricsURL, if set, is linked from the overview page.
	MetricsURL string
	// SessionTTL is how long a browser login lasts (default 12h).
	SessionTTL time.Duration
	// FailedLoginDelay slows down every failed login (default 500ms); at
	// most one failed login a second is checked beyond a burst of 10
	// (then 429), login forms and bearer tokens together, however many
	// are sent at once.
	FailedLoginDelay time.Duration
	// PageSize is the number of rows of a subscriptions or dead-letters
	// page (default 200).
	PageSize int
}

// AdminHandler is Admin with just the token.
func (h *Hub) AdminHandler(token string) http.Handler { return h.Admin(AdminOptions{Token: token}) }

// Admin serves the hub's administration under a directory (mount it at
// e.g. /admin/: every link is relative to it). Tools send the token as
// "Authorization: Bearer TOKEN"; a browser logs in with a form at the
// directory itself and then holds a session cookie (HttpOnly,
// SameSite=Strict, Secure over TLS; not the token), every form post
// being checked for same origin and carrying a per-session CSRF token.
//
//	GET  .../                   overview (HTML; the login form without a session)
//	GET  .../subscriptions      HTML for a browser's navigation (web.WantsHTML), else JSON (?page=N, ?topic=URL)
//	GET  .../dead-letters       HTML for a browser's navigation, else JSON (bodies omitted unless ?body=1)
//	POST .../replay?id=N        deliver dead letter N again; 200 when delivered
//	                            (from the HTML form: id in the form, then a redirect)
//	GET  .../stats              JSON Stats
//	POST .../login, .../logout  the browser session
func (h *Hub) Admin(o AdminOptions) http.Handler {
	if o.SessionTTL <= 0 {
		o.SessionTTL = 12 * time.Hour
	}
	if o.FailedLoginDelay <= 0 {
		o.FailedLoginDelay = 500 * time.Millisecond
	}
	if o.PageSize <= 0 {
		o.PageSize = 200
	}
	return &admin{h: h, o: o, sessions: map[string]*session{}, fails: authn.NewBudget(),
		cop: http.NewCrossOriginProtection()}
}

const (
	sessionCookie = "resourcesync_hub_admin"
	maxSessions   = 1000
)

type admin struct {
	h     *Hub
	o     AdminOptions
	fails *authn.Budget // failed logins, per client address and of all together
	cop   *http.CrossOriginProtection

	mu       sync.Mutex
	sessions map[string]*session // by cookie value (a random ID)
}

type session struct {
	expires time.Time
	csrf    string
	flash   *flash // shown once, after a redirect
}

type flash struct {
	OK  bool
	Msg string
}

func randomID() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// who says how a request is authenticated: by the bearer token (tools) or
// a browser session; neither: ok is false.
type who struct {
	bearer bool
	id     string
	s      *session
}

func (a *admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	// A window a same-origin page opens on the admin gets no handle to it
	// (browsers honour this over HTTPS and on localhost).
	w.Header().Set("Cross-Origin-Opener-Policy", "same-origin")
	p := r.URL.Path
	name := p[strings.LastIndex(p, "/")+1:] // "" for the directory itself
	dir := p[:strings.LastIndex(p, "/")+1]
	if a.o.Token == "" {
		a.unauthorized(w)
		return
	}
	var u who
	// Only a Bearer authorization is the tools' token: a browser sends
	// the HTTP basic credentials of the site the admin is part of (serve
	// --basic-auth-file) with every request, the admin's too.
	if got, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); bearer {
		if ok, limited := a.checkToken(got, r); !ok {
			if limited {
				w.Header().Set("Retry-After", "1")
				httpError(w, http.StatusTooManyRequests, "too many failed admin logins: wait a few seconds")
				return
			}
			a.unauthorized(w)
			return
		}
		u.bearer = true
	} else {
		if name == "login" {
			a.login(w, r, dir)
			return
		}
		// A session's requests are the browser's navigations only: a
		// script's fetch from a page on the same origin (serve
		// --hub-admin-token serves the Source's files, HTML included,
		// beside the admin) must not read the pages with the session
		// (their CSRF token, callback URLs). Fetch Metadata says which;
		// a client that sends none is not a modern browser.
		if m, d := r.Header.Get("Sec-Fetch-Mode"), r.Header.Get("Sec-Fetch-Dest"); m != "" && m != "navigate" || d != "" && d != "document" {
			httpError(w, http.StatusForbidden, "the admin pages are for navigation only")
			return
		}
		if u.id, u.s = a.session(r); u.s == nil {
			switch {
			case name == "" && r.Method == http.MethodGet:
				a.loginPage(w, http.StatusOK, "")
			case r.Method == http.MethodGet && web.WantsHTML(r):
				http.Redirect(w, r, "./", http.StatusSeeOther)
			default:
				a.unauthorized(w)
			}
			return
		}
	}
	switch {
	case name == "" && r.Method == http.MethodGet:
		a.overview(w, r, u)
	case name == "subscriptions" && r.Method == http.MethodGet:
		a.subscriptions(w, r, u)
	case name == "dead-letters" && r.Method == http.MethodGet:
		a.deadLetters(w, r, u)
	case name == "replay" && r.Method == http.MethodPost:
		if u.bearer {
			a.replayAPI(w, r)
		} else {
			a.replayForm(w, r, u)
		}
	case name == "stats" && r.Method == http.MethodGet:
		writeJSON(w, a.h.Stats())
	case name == "logout" && r.Method == http.MethodPost && !u.bearer:
		if !a.checkPost(w, r, u.s) {
			return
		}
		a.mu.Lock()
		delete(a.sessions, u.id)
		a.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: dir, MaxAge: -1, HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: overTLS(r)})
		http.Redirect(w, r, "./", http.StatusSeeOther)
	default:
		httpError(w, http.StatusNotFound, "unknown admin request")
	}
}

func (a *admin) unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="hub admin"`)
	httpError(w, http.StatusUnauthorized, "admin requires the admin bearer token")
}

// session returns the live session a cookie of the request names. Every
// cookie of the name is tried: another page of the site (a Source's HTML
// file, a sibling subdomain) can set one with a longer path, which the
// browser sends first.
func (a *admin) session(r *http.Request) (string, *session) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, c := range r.CookiesNamed(sessionCookie) {
		if i == 8 {
			break
		}
		s := a.sessions[c.Value]
		if s == nil {
			continue
		}
		if !time.Now().Before(s.expires) {
			delete(a.sessions, c.Value)
			continue
		}
		return c.Value, s
	}
	return "", nil
}

// login checks the token of the login form and starts a session.
func (a *admin) login(w http.ResponseWriter, r *http.Request, dir string) {
	if r.Method != http.MethodPost {
		http.Redirect(w, r, "./", http.StatusSeeOther)
		return
	}
	if err := a.cop.Check(r); err != nil {
		httpError(w, http.StatusForbidden, "cross-origin login refused")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if ok, limited := a.checkToken(r.PostFormValue("token"), r); !ok {
		if limited {
			w.Header().Set("Retry-After", "1")
			a.loginPage(w, http.StatusTooManyRequests, "Too many failed logins: wait a few seconds.")
			return
		}
		a.loginPage(w, http.StatusUnauthorized, "Wrong admin token.")
		return
	}
	id, now := randomID(), time.Now()
	a.mu.Lock()
	if len(a.sessions) >= maxSessions {
		var oldest string
		for k, s := range a.sessions {
			if !now.Before(s.expires) {
				delete(a.sessions, k)
			} else if oldest == "" || s.expires.Before(a.sessions[oldest].expires) {
				oldest = k
			}
		}
		if len(a.sessions) >= maxSessions {
			delete(a.sessions, oldest)
		}
	}
	a.sessions[id] = &session{expires: now.Add(a.o.SessionTTL), csrf: randomID()}
	a.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: dir, MaxAge: int(a.o.SessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(r)})
	http.Redirect(w, r, "./", http.StatusSeeOther)
}

// checkToken compares a token given (login form or bearer) with the
// admin token under the client address's failed-login budget
// (authn.Budget.TakeClient), taken before the comparison and given back
// when the token is right. limited: refused unchecked. The budget shared
// by all clients is not spent: a comparison costs nothing, and guessers
// on many addresses must not make the right token wait. A guesser gets
// 10 at once and then one a second per address (per /64 for IPv6), and
// a fresh budget for an address the table of 10,000 forgot: nothing
// bounds the guesses of one with many addresses, so the admin token must
// be long and random (openssl rand -hex 32), never a word.
func (a *admin) checkToken(got string, r *http.Request) (ok, limited bool) {
	give, ok := a.fails.TakeClient(authn.Client(r))
	if !ok {
		return false, true
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(a.o.Token)) == 1 {
		give()
		return true, false
	}
	time.Sleep(a.o.FailedLoginDelay)
	return false, false
}

// checkPost refuses a form post of a browser session that is not from
// the same origin or lacks the session's CSRF token.
func (a *admin) checkPost(w http.ResponseWriter, r *http.Request, s *session) bool {
	if err := a.cop.Check(r); err != nil {
		httpError(w, http.StatusForbidden, "cross-origin request refused")
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if got := r.PostFormValue("csrf"); got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 {
		httpError(w, http.StatusForbidden, "missing or wrong CSRF token: reload the page")
		return false
	}
	return true
}

// replayAPI is the tools' replay: ?id=N, a JSON or plain-text answer.
func (a *admin) replayAPI(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseUint(r.URL.Query().Get("id"), 10, 64)
	if err != nil {
		httpError(w, http.StatusBadRequest, "replay needs ?id=N")
		return
	}
	if err := a.h.Replay(r.Context(), id); err != nil {
		code := http.StatusBadGateway
		if errors.Is(err, ErrNoSubscription) {
			code = http.StatusConflict
		}
		httpError(w, code, err.Error())
		return
	}
	writeJSON(w, map[string]any{"replayed": id})
}

// replayForm is the browser's replay: the outcome is kept in the session
// and shown on the dead-letters page it redirects to.
func (a *admin) replayForm(w http.ResponseWriter, r *http.Request, u who) {
	if !a.checkPost(w, r, u.s) {
		return
	}
	id, err := strconv.ParseUint(r.PostFormValue("id"), 10, 64)
	if err != nil {
		httpError(w, http.StatusBadRequest, "replay needs an id")
		return
	}
	f := &flash{OK: true, Msg: "Dead letter " + strconv.FormatUint(id, 10) + " replayed: delivered."}
	if err := a.h.Replay(r.Context(), id); err != nil {
		f = &flash{Msg: "Replay of dead letter " + strconv.FormatUint(id, 10) + " failed: " + err.Error()}
	}
	a.mu.Lock()
	u.s.flash = f
	a.mu.Unlock()
	to := "dead-letters"
	if p := r.PostFormValue("page"); p != "" && p != "1" {
		to += "?" + url.Values{"page": {p}}.Encode()
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// overTLS reports whether the browser reached the page over HTTPS: TLS
// here, or at a reverse proxy that says so. A client lying about it only
// makes its own cookie Secure (not sent back over plain HTTP).
func overTLS(r *http.Request) bool {
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		return true
	}
	for _, f := range strings.Split(r.Header.Get("Forwarded"), ";") {
		if v, ok := strings.CutPrefix(strings.ToLower(strings.TrimSpace(f)), "proto="); ok && strings.Trim(v, `"`) == "https" {
			return true
		}
	}
	return false
}
