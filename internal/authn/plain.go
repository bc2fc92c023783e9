package authn

import (
	"io"
	"net/http"
)

// challenge answers 401 with a challenge per scheme configured (also when
// its file was emptied: the scheme is still the one to use); invalid
// names the scheme whose credentials were wrong (RFC 6750's
// error="invalid_token" for Bearer).
func (a *Authenticator) challenge(w http.ResponseWriter, invalid string) {
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
	plain(w, http.StatusUnauthorized, msg)
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
