package discover

import (
	"bufio"
	"bytes"
	"html"
	"net/url"
	"strings"

	"github.com/resourcesync-go/resourcesync/internal/linkheader"
)

// HeaderLink is one link of an HTTP Link header (RFC 8288).
type HeaderLink struct {
	Href string   // resolved against the response's URL
	Rel  []string // relation types, as given
	// Params holds the other parameters (type, title, anchor, ...), names
	// lower-cased, values unquoted.
	Params map[string]string
}

// HasRel reports whether rel is one of l's relation types (compared
// case-insensitively, as RFC 8288 §2.1.1 requires for registered types).
func (l *HeaderLink) HasRel(rel string) bool {
	for _, r := range l.Rel {
		if strings.EqualFold(r, rel) {
			return true
		}
	}
	return false
}

func findHeaderLink(ls []HeaderLink, rel string) string {
	for i := range ls {
		if ls[i].HasRel(rel) {
			return ls[i].Href
		}
	}
	return ""
}

// ParseLinkHeader parses the values of Link headers (internal/linkheader),
// resolving each target against base (which may be nil). Malformed links
// and targets that are not absolute http(s) URLs are skipped; a link
// without rel is kept with an empty Rel.
func ParseLinkHeader(base *url.URL, values []string) []HeaderLink {
	var out []HeaderLink
	for _, l := range linkheader.Parse(nil, values) {
		if h := resolve(base, l.Target); h != "" {
			out = append(out, HeaderLink{Href: h, Rel: l.Rel, Params: l.Params})
		}
	}
	return out
}

// resolve returns ref resolved against base as an absolute http(s) URL,
// or "" when it is not one.
func resolve(base *url.URL, ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return ""
	}
	u, err := url.Parse(ref)
	if err != nil {
		return ""
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	u.Fragment, u.RawFragment = "", ""
	s := u.String()
	// Some hosts parse as a reference but not as a URL ("//::").
	if _, err := url.Parse(s); err != nil {
		return ""
	}
	return s
}

// maxHTML is how much of an HTML page is searched for links.
const maxHTML = 1 << 20

// htmlLinks returns the hrefs of the <link> elements of an HTML page whose
// rel includes rel, resolved against base (or against the page's <base
// href>, when it has one). It is a small tolerant scanner, not a parser:
// it skips comments and the contents of script, style, textarea and title
// so that markup quoted there is not taken for a link.
func htmlLinks(page []byte, base *url.URL, rel string) []string {
	if len(page) > maxHTML {
		page = page[:maxHTML]
	}
	var hrefs []string
	for i := 0; i < len(page); {
		lt := bytes.IndexByte(page[i:], '<')
		if lt < 0 {
			break
		}
		i += lt + 1
		rest := page[i:]
		if bytes.HasPrefix(rest, []byte("!--")) {
			end := bytes.Index(rest[3:], []byte("-->"))
			if end < 0 {
				break
			}
			i += 3 + end + 3
			continue
		}
		if len(rest) > 0 && (rest[0] == '!' || rest[0] == '?' || rest[0] == '/') {
			continue // doctype, processing instruction, end tag
		}
		name, n := tagName(rest)
		if name == "" {
			continue
		}
		attrs, m := tagAttrs(rest[n:])
		i += n + m
		switch name {
		case "script", "style", "textarea", "title", "xmp":
			// Raw text up to the matching end tag.
			end := indexFold(page[i:], "</"+name)
			if end < 0 {
				i = len(page)
			} else {
				i += end
			}
		case "base":
			if h, ok := attrs["href"]; ok && base != nil {
				if u, err := url.Parse(strings.TrimSpace(h)); err == nil {
					nb := base.ResolveReference(u)
					base = nb
				}
			}
		case "link":
			h, ok := attrs["href"]
			if !ok || !hasToken(attrs["rel"], rel) {
				continue
			}
			if r := resolve(base, h); r != "" {
				hrefs = append(hrefs, r)
			}
		}
	}
	return hrefs
}

func hasToken(list, tok string) bool {
	for _, t := range strings.Fields(list) {
		if strings.EqualFold(t, tok) {
			return true
		}
	}
	return false
}

func indexFold(b []byte, s string) int {
	ls := []byte(strings.ToLower(s))
	for i := 0; i+len(ls) <= len(b); i++ {
		if bytes.EqualFold(b[i:i+len(ls)], ls) {
			return i
		}
	}
	return -1
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

// tagName reads an element name at the start of b (lower-cased) and the
// number of bytes it took.
func tagName(b []byte) (string, int) {
	n := 0
	for n < len(b) && (b[n] >= 'a' && b[n] <= 'z' || b[n] >= 'A' && b[n] <= 'Z' || n > 0 && (b[n] >= '0' && b[n] <= '9' || b[n] == '-' || b[n] == ':')) {
		n++
	}
	return strings.ToLower(string(b[:n])), n
}

// tagAttrs reads attributes up to the end of a start tag. Names are
// lower-cased, values unescaped; the first of repeated names wins. It
// returns the number of bytes read, past the closing '>' when there is one.
func tagAttrs(b []byte) (map[string]string, int) {
	attrs := map[string]string{}
	i := 0
	for i < len(b) {
		for i < len(b) && (isSpace(b[i]) || b[i] == '/') {
			i++
		}
		if i >= len(b) {
			break
		}
		if b[i] == '>' {
			return attrs, i + 1
		}
		start := i
		for i < len(b) && !isSpace(b[i]) && b[i] != '=' && b[i] != '>' && b[i] != '/' {
			i++
		}
		if i == start { // a lone '=': skip it
			i++
			continue
		}
		name := strings.ToLower(string(b[start:i]))
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		val := ""
		if i < len(b) && b[i] == '=' {
			i++
			for i < len(b) && isSpace(b[i]) {
				i++
			}
			if i < len(b) && (b[i] == '"' || b[i] == '\'') {
				q := b[i]
				end := bytes.IndexByte(b[i+1:], q)
				if end < 0 {
					return attrs, len(b) // unterminated: the rest is this value
				}
				val = string(b[i+1 : i+1+end])
				i += end + 2
			} else {
				s := i
				for i < len(b) && !isSpace(b[i]) && b[i] != '>' {
					i++
				}
				val = string(b[s:i])
			}
		}
		if _, dup := attrs[name]; !dup && len(attrs) < 64 {
			attrs[name] = html.UnescapeString(val)
		}
	}
	return attrs, i
}

// maxRobots is how much of a robots.txt is read (Google reads 500 KiB).
const maxRobots = 512 << 10

// robotsSitemaps returns the URLs of the Sitemap lines of a robots.txt,
// resolved against base, in order and without repeats.
func robotsSitemaps(txt []byte, base *url.URL) []string {
	if len(txt) > maxRobots {
		txt = txt[:maxRobots]
	}
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(txt))
	sc.Buffer(make([]byte, 0, 4096), maxRobots+1)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "sitemap") {
			continue
		}
		if u := resolve(base, v); u != "" && !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}
