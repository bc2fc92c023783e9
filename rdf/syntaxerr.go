package rdf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrNotSerializable is returned by a writer for a triple its format cannot
// express (an RDF/XML predicate with no namespace/local-name split, a
// literal subject).
var ErrNotSerializable = errors.New("rdf: triple cannot be serialised in this format")

// TurtleError is a syntax error in a Turtle document at Line and Col
// (1-based; Col counts characters).
type TurtleError struct {
	Line, Col int
	Msg       string
}

func (e *TurtleError) Error() string {
	return fmt.Sprintf("turtle: line %d col %d: %s", e.Line, e.Col, e.Msg)
}

func (e *TurtleError) Unwrap() error { return ErrSyntax }

// RDFXMLError is a syntax error in an RDF/XML document at Line and Col
// (1-based, the position the XML decoder had reached).
type RDFXMLError struct {
	Line, Col int
	Msg       string
	Err       error // underlying XML error, if any
}

func (e *RDFXMLError) Error() string {
	return fmt.Sprintf("rdf/xml: line %d col %d: %s", e.Line, e.Col, e.Msg)
}

// Unwrap gives ErrSyntax and the XML decoder's error, if any.
func (e *RDFXMLError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrSyntax, e.Err}
	}
	return []error{ErrSyntax}
}

// genBlankPrefix starts the labels readers invent for anonymous blank
// nodes. A written label (Turtle/N-Triples BLANK_NODE_LABEL, RDF/XML
// NCName) can never start with '-', so invented labels never collide with
// the document's own.
const genBlankPrefix = "-b"

func genBlank(n int) Term { return Blank(genBlankPrefix + strconv.Itoa(n)) }

// safeBlankLabel maps any blank node label to one that is valid both in
// Turtle/N-Triples and as an XML NCName (rdf:nodeID), injectively and
// without state, so writers stream. Labels of an ASCII letter followed by
// ASCII letters, digits or '-' are kept; any other label becomes "x_"
// followed by its bytes with every byte outside [A-Za-z0-9] written as
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
	if plain {
		return s
	}
	var b strings.Builder
	b.WriteString("x_")
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}
