package web

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
)

// CSP is the Content-Security-Policy of every view: nothing loads from
// anywhere (no script, no font, no frame, no external image), the one
// inline stylesheet is allowed by its hash, images only inline (data:, the
// SVG charts are inline elements), forms post only to the same origin.
var CSP = MetaCSP + "; frame-ancestors 'none'"

// MetaCSP is the CSP the layout also carries in a meta element, for a
// page read without the header: a mirror's report opened from disk
// (file://), an HTML companion on a static host. A meta element cannot
// carry frame-ancestors (browsers ignore it there, with a warning).
var MetaCSP = "default-src 'none'; style-src '" + styleHash() + "'; img-src 'self' data:; form-action 'self'; base-uri 'none'"

func styleHash() string {
	sum := sha256.Sum256([]byte(Style))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// SetHeaders sets the headers of an HTML view: its type, the CSP, and
// those that stop sniffing, framing and leaking the URL to other sites.
func SetHeaders(h http.Header) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
}

// Vary adds the names of VaryHTML that a response's Vary header lacks:
// a document served as HTML or XML by the same URL must not be cached as
// one for the other. Both variants carry it.
func Vary(h http.Header) {
	have := map[string]bool{}
	for _, v := range h.Values("Vary") {
		for _, f := range strings.Split(v, ",") {
			have[strings.ToLower(strings.TrimSpace(f))] = true
		}
	}
	if have["*"] {
		return
	}
	var add []string
	for _, n := range strings.Split(VaryHTML, ", ") {
		if !have[strings.ToLower(n)] {
			add = append(add, n)
		}
	}
	if len(add) > 0 {
		h.Add("Vary", strings.Join(add, ", "))
	}
}
