package sparql

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// Terms are written in the syntax N-Triples and SPARQL share, so one
// writer serves update templates, query patterns and Graph Store bodies.

const virtuosoNodeID = "nodeID://"

var langTag = regexp.MustCompile(`^[a-zA-Z]+(-[a-zA-Z0-9]+)*$`)

// appendIRI appends <iri>, refusing what neither syntax can hold.
func appendIRI(b []byte, iri string) ([]byte, error) {
	if iri == "" || !utf8.ValidString(iri) || strings.ContainsFunc(iri, func(r rune) bool {
		return r <= 0x20 || strings.ContainsRune("<>\"{}|^`\\", r)
	}) {
		return b, fmt.Errorf("%w: IRI %q", ErrInvalidTerm, iri)
	}
	// Virtuoso reads <nodeID://…> as a reference to its blank node of
	// that id: written as an IRI it would link to an unrelated node.
	if len(iri) >= len(virtuosoNodeID) && strings.EqualFold(iri[:len(virtuosoNodeID)], virtuosoNodeID) {
		return b, fmt.Errorf("%w: IRI %q (Virtuoso reads nodeID: IRIs as its blank nodes)", ErrInvalidTerm, iri)
	}
	b = append(b, '<')
	b = append(b, iri...)
	return append(b, '>'), nil
}

// appendBlank appends a label made of letters, digits and _xx escapes of
// every other byte: injective, valid in SPARQL and N-Triples, and needing
// no table (a snapshot's labels are not held in memory).
func appendBlank(b []byte, label string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, "_:b"...)
	for i := 0; i < len(label); i++ {
		c := label[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b = append(b, c)
		} else {
			b = append(b, '_', hex[c>>4], hex[c&15])
		}
	}
	return b
}

// appendTerm appends t.
func appendTerm(b []byte, t rdf.Term) ([]byte, error) {
	switch t.Kind {
	case rdf.KindIRI:
		return appendIRI(b, t.Value)
	case rdf.KindBlank:
		return appendBlank(b, t.Value), nil
	case rdf.KindLiteral:
		if !utf8.ValidString(t.Value) {
			return b, fmt.Errorf("%w: literal is not UTF-8", ErrInvalidTerm)
		}
		b = append(b, '"')
		for _, r := range t.Value {
			switch r {
			case '"':
				b = append(b, `\"`...)
			case '\\':
				b = append(b, `\\`...)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			default:
				b = utf8.AppendRune(b, r)
			}
		}
		b = append(b, '"')
		switch {
		case t.Lang != "" || t.Datatype == rdf.RDFLangString:
			if !langTag.MatchString(t.Lang) {
				return b, fmt.Errorf("%w: language tag %q", ErrInvalidTerm, t.Lang)
			}
			b = append(b, '@')
			return append(b, t.Lang...), nil
		case t.Datatype == "" || t.Datatype == rdf.XSDString:
			return b, nil
		}
		b = append(b, "^^"...)
		return appendIRI(b, t.Datatype)
	}
	return b, fmt.Errorf("%w: the zero term", ErrInvalidTerm)
}

// appendTriple appends "s p o .\n".
func appendTriple(b []byte, t rdf.Triple) ([]byte, error) {
	if !t.S.IsIRI() && !t.S.IsBlank() {
		return b, fmt.Errorf("%w: subject %v", ErrInvalidTerm, t.S)
	}
	if !t.P.IsIRI() {
		return b, fmt.Errorf("%w: predicate %v", ErrInvalidTerm, t.P)
	}
	var err error
	for i, x := range []rdf.Term{t.S, t.P, t.O} {
		if i > 0 {
			b = append(b, ' ')
		}
		if b, err = appendTerm(b, x); err != nil {
			return b, err
		}
	}
	return append(b, " .\n"...), nil
}

// iriRef returns <iri> for a graph or resource name.
func iriRef(iri string) (string, error) {
	b, err := appendIRI(nil, iri)
	return string(b), err
}
