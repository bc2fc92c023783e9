package web

import (
	"mime"
	"strconv"
	"strings"
)

// WantsHTML reports whether a request prefers HTML to XML: its Accept
// header names text/html or application/xhtml+xml explicitly, with a
// quality above that of every XML type (and of any wildcard) it accepts. Everything else (no
// Accept, */*, application/xml, text/xml, the Accept of curl, wget,
// py-resync or our own sync) gets the XML. A browser's Accept
// ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
// gets HTML.
func WantsHTML(accept string) bool {
	if accept == "" {
		return false
	}
	var html, xml float64 = -1, -1
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if s, ok := params["q"]; ok {
			if v, err := strconv.ParseFloat(s, 64); err == nil && v >= 0 && v <= 1 {
				q = v
			}
		}
		switch {
		case mt == "text/html" || mt == "application/xhtml+xml":
			html = max(html, q)
		case mt == "application/xml" || mt == "text/xml" || strings.HasSuffix(mt, "+xml") || mt == "application/*" || mt == "text/*" || mt == "*/*":
			xml = max(xml, q)
		}
	}
	return html > 0 && html > xml
}
