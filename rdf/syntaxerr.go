package rdf

import (
	"errors"
	"strconv"
	"strings"
)

// ErrNotSerializable is returned by a writer for a triple its format cannot
// express (an RDF/XML predicate with no namespace/local-name split, a
// literal subject).
var ErrNotSerializable = errors.New("rdf: triple cannot be serialised in this format")

// genBlankPrefix starts the labels readers invent for anonymous blank
// nodes ([] and collections in Turtle, node elements without a subject in
// RDF/XML): "genid-1", "genid-2", ... They are valid N-Triples labels, so
// every writer takes them. A label the document wrote is returned as
// written, except one that itself starts with genBlankPrefix: it gets a
// 'w' after the prefix, so it can never meet an invented one (those have a
// digit there).
const genBlankPrefix = "genid-"

func genBlank(n int) Term { return Blank(genBlankPrefix + strconv.Itoa(n)) }

// writtenBlank is the blank node for a label written in a document. An
// RDF/XML rdf:nodeID is an XML name, which may hold characters an
// N-Triples label may not (U+00AA, say): such a label becomes
// genBlankPrefix + safeBlankLabel(label), "genid-x_...", so that every
// label a reader returns can be written as N-Triples.
func writtenBlank(label string) Term {
	if blankLabelLen([]byte(label)) != len(label) {
		return Blank(genBlankPrefix + safeBlankLabel(label))
	}
	if rest, ok := strings.CutPrefix(label, genBlankPrefix); ok {
		return Blank(genBlankPrefix + "w" + rest)
	}
	return Blank(label)
}

// safeBlankLabel maps any blank node label to one that is valid both in
// Turtle/N-Triples and as an XML NCName (rdf:nodeID), injectively and
// without state, so writers stream. Labels of an ASCII letter followed by
// ASCII letters, digits or '-' are kept, unless they start with
// genBlankPrefix (a reader would rename them); any other label becomes "x_"
// followed by its bytes with every byte outside [A-Za-z0-9-] written as
// _HH. Kept labels never contain '_', escaped ones always do, so two
// distinct labels never meet.
func safeBlankLabel(s string) string {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '-'):
		default:
			plain = false
		}
	}
	if plain && !strings.HasPrefix(s, genBlankPrefix) {
		return s
	}
	var b strings.Builder
	b.WriteString("x_")
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}
