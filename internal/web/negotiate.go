package web

import (
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// VaryHTML names the request headers WantsHTML reads: every response of a
// URL that answers both a page and the machine representation carries
// them in Vary (see Vary), so that no cache hands a page to a machine
// client or the XML to a browser. The query (?format=html) is part of the
// cache key already.
const VaryHTML = "Accept, Sec-Fetch-Dest, Sec-Fetch-Mode, Upgrade-Insecure-Requests"

// WantsHTML reports whether r is to be answered with the HTML view of a
// document or feed rather than its machine representation (XML, Atom,
// JSON). It is the one policy of every server of the toolkit:
//
//   - ?format=html asks for the page explicitly (a link, a script, a test);
//     any other format value (xml, atom, json) asks for the machine
//     representation, even from a browser's address bar;
//   - otherwise only a browser's navigation gets the page. A request with
//     Fetch Metadata is one when Sec-Fetch-Dest is "document" or
//     Sec-Fetch-Mode is "navigate" (every current browser, on https and on
//     loopback); a fetch() or XMLHttpRequest says "empty" and "cors" and
//     gets the XML. Browsers send no Fetch Metadata to a plain-http origin
//     other than loopback (and older ones send none at all): there a
//     navigation is told by Upgrade-Insecure-Requests: 1, which browsers
//     send on navigations only;
//   - and in both cases the Accept header must name text/html or
//     application/xhtml+xml (with a quality above 0), as every browser's
//     navigation does.
//
// The Accept header alone never decides: Java's HttpURLConnection sends
// "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2" by default, and
// every Java client (an SDShare or ResourceSync harvester) must get the
// XML. No Accept, */*, and the defaults of curl, wget, Python, Node, .NET,
// Go, Ruby, PHP and libxml2 get the XML too.
func WantsHTML(r *http.Request) bool {
	if r.URL != nil && r.URL.RawQuery != "" {
		if q := r.URL.Query(); q.Has("format") {
			return strings.EqualFold(q.Get("format"), "html")
		}
	}
	h := r.Header
	dest, mode := h.Get("Sec-Fetch-Dest"), h.Get("Sec-Fetch-Mode")
	var nav bool
	if dest != "" || mode != "" {
		nav = dest == "document" || mode == "navigate"
	} else {
		nav = strings.TrimSpace(h.Get("Upgrade-Insecure-Requests")) == "1"
	}
	return nav && namesHTML(h.Values("Accept"))
}

// namesHTML reports whether an Accept header names text/html or
// application/xhtml+xml with a quality above 0.
func namesHTML(accept []string) bool {
	for _, line := range accept {
		for _, part := range strings.Split(line, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || mt != "text/html" && mt != "application/xhtml+xml" {
				continue
			}
			if s, ok := params["q"]; ok {
				if v, err := strconv.ParseFloat(s, 64); err != nil || v <= 0 {
					continue
				}
			}
			return true
		}
	}
	return false
}

// AcceptsGzip reports whether r's Accept-Encoding accepts gzip (or its
// alias x-gzip, or * without gzip named) with a quality above 0: the
// response may then be the gzip-compressed representation, sent with
// Content-Encoding: gzip. No header, "identity" and an unparsable quality
// do not.
func AcceptsGzip(r *http.Request) bool {
	star := false
	for _, line := range r.Header.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(line, ",") {
			name, params, _ := strings.Cut(part, ";")
			name = strings.ToLower(strings.TrimSpace(name))
			if name != "gzip" && name != "x-gzip" && name != "*" {
				continue
			}
			ok := true
			for p := range strings.SplitSeq(params, ";") {
				k, v, _ := strings.Cut(p, "=")
				if strings.EqualFold(strings.TrimSpace(k), "q") {
					q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
					ok = err == nil && q > 0
				}
			}
			if name == "*" {
				star = ok
				continue
			}
			return ok
		}
	}
	return star
}
