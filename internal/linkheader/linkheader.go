package linkheader

import (
	"net/url"
	"strings"
)

// MaxLinks bounds the links Parse returns for one message.
const MaxLinks = 256

// Link is one link-value.
type Link struct {
	// Target is the URI-Reference as written between < and >.
	Target string
	// URL is Target resolved against the base given to Parse (Target
	// itself when there is no base or it does not parse).
	URL string
	// Rel holds the relation types of the first rel parameter, as written
	// (RFC 8288 §3.3: later rel parameters are ignored); nil when none.
	Rel []string
	// Params holds the other parameters: names lower-cased, values
	// unquoted; the first occurrence of a name wins. nil when none.
	Params map[string]string
	// Raw is the link-value as sent (trimmed), for passing it on.
	Raw string
}

// HasRel reports whether rel is one of l's relation types, compared
// case-insensitively (RFC 8288 §2.1.1).
func (l *Link) HasRel(rel string) bool {
	for _, r := range l.Rel {
		if strings.EqualFold(r, rel) {
			return true
		}
	}
	return false
}

// Find returns the first link with relation rel.
func Find(links []Link, rel string) (Link, bool) {
	for _, l := range links {
		if l.HasRel(rel) {
			return l, true
		}
	}
	return Link{}, false
}

// Parse parses the values of every Link field of a message, in order,
// resolving targets against base (which may be nil).
func Parse(base *url.URL, fields []string) []Link {
	var out []Link
	for _, f := range fields {
		s := f
		for len(out) < MaxLinks {
			s = strings.TrimLeft(s, " \t,")
			if s == "" {
				break
			}
			if s[0] != '<' {
				s = skipValue(s) // not a link-value: skip to the next one
				continue
			}
			end := strings.IndexByte(s, '>')
			if end < 0 {
				break
			}
			start := s
			l := Link{Target: strings.TrimSpace(s[1:end])}
			if strings.IndexByte(l.Target, '<') >= 0 {
				s = skipValue(s) // "<<x>": not a URI-Reference
				continue
			}
			s = parseParams(s[end+1:], &l)
			// Anything else up to the next link is junk.
			junk := s != "" && s[0] != ','
			if junk {
				s = skipValue(s) // consumes the comma that ends the junk
			}
			l.Raw = strings.TrimSpace(start[:len(start)-len(s)])
			if junk {
				l.Raw = strings.TrimRight(l.Raw, ", \t")
			} // else a trailing comma is inside an unterminated quoted value
			l.URL = resolve(base, l.Target)
			out = append(out, l)
		}
	}
	return out
}

// parseParams reads *( OWS ";" OWS link-param ) into l and returns the rest.
func parseParams(s string, l *Link) string {
	seenRel := false
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" || s[0] != ';' {
			return s
		}
		s = strings.TrimLeft(s[1:], " \t")
		var name string
		if i := strings.IndexAny(s, "=;,"); i < 0 {
			name, s = s, ""
		} else {
			name, s = s[:i], s[i:]
		}
		name = strings.ToLower(strings.TrimSpace(name))
		val := ""
		if s != "" && s[0] == '=' {
			val, s = paramValue(strings.TrimLeft(s[1:], " \t"))
		}
		switch {
		case name == "":
		case name == "rel":
			if !seenRel {
				seenRel = true
				l.Rel = strings.Fields(val)
			}
		default:
			if l.Params == nil {
				l.Params = map[string]string{}
			}
			if _, dup := l.Params[name]; !dup && len(l.Params) < 32 {
				l.Params[name] = val
			}
		}
	}
}

// paramValue reads a token or a quoted-string and returns it and the rest.
func paramValue(s string) (string, string) {
	if s != "" && s[0] == '"' {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				if i+1 < len(s) {
					i++
					b.WriteByte(s[i])
				}
			case '"':
				return b.String(), s[i+1:]
			default:
				b.WriteByte(s[i])
			}
		}
		return b.String(), "" // unterminated: the rest is the value
	}
	i := strings.IndexAny(s, "; \t,")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// skipValue drops s up to the next comma outside quotes and angle brackets.
func skipValue(s string) string {
	inQ, inA := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQ && c == '\\':
			i++
		case c == '"' && !inA:
			inQ = !inQ
		case c == '<' && !inQ:
			inA = true
		case c == '>' && !inQ:
			inA = false
		case c == ',' && !inQ && !inA:
			return s[i+1:]
		}
	}
	return ""
}

func resolve(base *url.URL, ref string) string {
	if base == nil {
		return ref
	}
	u, err := url.Parse(ref)
	if err != nil {
		return ref
	}
	return base.ResolveReference(u).String()
}
