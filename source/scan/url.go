package scan

import (
	"net/url"
	"strings"
)

// EscapePath returns rel, a slash-separated relative path of raw bytes, as
// an escaped URL path: each segment escaped with url.PathEscape, which
// percent-encodes every byte outside the unreserved set, so spaces, '%',
// '#', '?', ';' and non-ASCII characters are encoded as their UTF-8 bytes
// and bytes of invalid UTF-8 are encoded one by one (0xFF becomes %FF).
// The slashes between segments are kept.
func EscapePath(rel string) string {
	if plainPath(rel) {
		return rel // the common case: nothing to escape, nothing to allocate
	}
	var b strings.Builder
	b.Grow(len(rel) + len(rel)/4)
	for i, seg := range strings.Split(rel, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(url.PathEscape(seg))
	}
	return b.String()
}

// plainPath reports whether every byte of rel is a slash or unreserved
// (letters, digits, '-', '.', '_', '~'), which url.PathEscape keeps.
func plainPath(rel string) bool {
	for i := 0; i < len(rel); i++ {
		switch c := rel[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~', c == '/':
		default:
			return false
		}
	}
	return true
}

// UnescapePath reverses EscapePath: it decodes each segment of an escaped
// URL path back to raw bytes. An escaped slash (%2F) inside a segment is
// refused, since it cannot name a file.
func UnescapePath(escaped string) (string, error) {
	segs := strings.Split(escaped, "/")
	for i, seg := range segs {
		s, err := url.PathUnescape(seg)
		if err != nil {
			return "", err
		}
		if strings.Contains(s, "/") {
			return "", url.EscapeError(seg)
		}
		segs[i] = s
	}
	return strings.Join(segs, "/"), nil
}

// ResourceURL returns the URL of the resource at rel under base: base with
// a slash appended when it lacks one, followed by EscapePath(rel). base must
// already be a valid URL (it is used as written).
func ResourceURL(base, rel string) string {
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	return base + EscapePath(rel)
}
