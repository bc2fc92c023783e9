package harvest

import (
	"crypto/sha256"
	"encoding/hex"
	"runtime"
	"strings"
)

const hexUpper = "0123456789ABCDEF"

// escapeName percent-encodes what RecordPath documents.
func escapeName(s string, windows bool) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c == '%' || c == '/' || c == '\\' || c == '<' || c == '>' ||
			c == '"' || c == '|' || c == '?' || c == '*' || (c == '.' && i == 0) || (c == ':' && windows) {
			b.WriteByte('%')
			b.WriteByte(hexUpper[c>>4])
			b.WriteByte(hexUpper[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func unescapeName(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		v, err := hex.DecodeString(s[i+1 : i+3])
		if err != nil {
			return "", false
		}
		b.WriteByte(v[0])
		i += 2
	}
	return b.String(), true
}

func bucket(identifier string) string {
	sum := sha256.Sum256([]byte(identifier))
	return hex.EncodeToString(sum[:1])
}

// RecordPath is where the record of identifier in prefix is kept, relative
// to Config.Dir and slash-separated: PREFIX/HH/ESCAPED.xml, where HH is
// the first byte of the SHA-256 of the identifier in hex (256 directories,
// so that no directory listing grows past a few thousand entries at a
// million records) and ESCAPED the identifier with '%', '/', '\\',
// control bytes, '<', '>', '"', '|', '?', '*', a leading '.' and (on
// Windows only, which forbids it in names) ':' percent-encoded; the ':' of
// the usual oai:host:id identifiers thus stays readable in the URL.
// ParseRecordPath reverses it. (The prefix is escaped the same way; the
// prefixes OAI-PMH allows need none of it.)
func RecordPath(identifier, prefix string) string {
	w := runtime.GOOS == "windows"
	return escapeName(prefix, w) + "/" + bucket(identifier) + "/" + escapeName(identifier, w) + ".xml"
}

// ParseRecordPath returns the identifier and prefix of a RecordPath.
func ParseRecordPath(rel string) (identifier, prefix string, ok bool) {
	p, rest, ok1 := strings.Cut(rel, "/")
	hh, name, ok2 := strings.Cut(rest, "/")
	name, ok3 := strings.CutSuffix(name, ".xml")
	if !ok1 || !ok2 || !ok3 || len(hh) != 2 || name == "" || p == "" || strings.Contains(name, "/") {
		return "", "", false
	}
	id, ok1 := unescapeName(name)
	prefix, ok2 = unescapeName(p)
	if !ok1 || !ok2 || bucket(id) != hh || RecordPath(id, prefix) != rel {
		// Only the one spelling RecordPath makes (on this system) is a
		// record's: other files in Dir are not records.
		return "", "", false
	}
	return id, prefix, true
}
