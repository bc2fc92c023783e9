package authn

import (
	"io"
	"net/http"
	"strings"

	"github.com/resourcesync-go/resourcesync/internal/web"
)

// challenge answers 401 with a challenge per scheme configured (also when
// its file was emptied: the scheme is still the one to use); invalid
// names the scheme whose credentials were wrong (RFC 6750's
// error="invalid_token" for Bearer).
//
// A browser (web.WantsHTML: a navigation that accepts HTML) gets, with the
// same status and challenges, a short page that says how to get in: the
// Basic challenge makes it ask for a user and password, but it cannot send
// a token, so the page says which clients can and how. Machine clients
// keep the plain text.
func (a *Authenticator) challenge(w http.ResponseWriter, r *http.Request, invalid string) {
	realm := quote(a.cfg.Realm)
	if a.cfg.TokenFile != "" || len(a.cfg.Tokens) > 0 {
		v := `Bearer realm=` + realm
		if invalid == "Bearer" {
			v += `, error="invalid_token"`
		}
		w.Header().Add("WWW-Authenticate", v)
	}
	if a.cfg.BasicFile != "" {
		w.Header().Add("WWW-Authenticate", `Basic realm=`+realm+`, charset="UTF-8"`)
	}
	msg := "authentication required"
	if invalid != "" {
		msg = "wrong credentials"
	}
	if r != nil && web.WantsHTML(r) {
		a.challengePage(w, r, invalid != "")
		return
	}
	plain(w, http.StatusUnauthorized, msg)
}

var challengeView = web.New("authn", `{{define "content"}}
<h1>{{if .Data.Wrong}}Wrong credentials{{else}}Sign-in required{{end}}</h1>
{{if .Data.Basic}}<p>This server takes a user name and password{{if .Data.Token}} or an access token{{end}}.
{{if .Data.Wrong}}The ones given were refused: reload{{else}}Your browser asks for them; if you cancelled, reload{{end}} the page to give them again.</p>{{end}}
{{if .Data.Token}}<p>This server takes an access token, which a browser cannot send. Give it to a client instead, in the
<code>Authorization: Bearer</code> header:</p>
<pre>curl -H 'Authorization: Bearer TOKEN' {{.Data.URL}}</pre>
<pre>resourcesync sync --bearer-token-file FILE {{.Data.Root}} DEST</pre>
<p>(<code>resourcesync</code> also reads the token from <code>$`+envBearerToken+`</code>.)</p>{{end}}
{{end}}`, nil)

// envBearerToken is httpclient.EnvBearerToken (not imported: authn is the
// server side).
const envBearerToken = "RESOURCESYNC_BEARER_TOKEN"

// challengePage writes the 401 page of a browser.
func (a *Authenticator) challengePage(w http.ResponseWriter, r *http.Request, wrong bool) {
	h := w.Header()
	web.SetHeaders(h)
	web.Vary(h)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusUnauthorized)
	u, root := "URL", "SOURCE"
	if r.Host != "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		root = scheme + "://" + r.Host + "/"
		u = root + strings.TrimPrefix(r.URL.EscapedPath(), "/")
	}
	web.Render(w, challengeView, web.Page{Title: "Sign-in required", Data: struct {
		Basic, Token, Wrong bool
		URL, Root           string
	}{a.cfg.BasicFile != "", a.cfg.TokenFile != "" || len(a.cfg.Tokens) > 0, wrong, u, root}})
}

// quote is an RFC 9110 quoted-string.
func quote(s string) string {
	b := []byte{'"'}
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(append(b, '"'))
}

func plain(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	io.WriteString(w, msg+"\n")
}
