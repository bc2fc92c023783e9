package sparql

import (
	"crypto/rand"
	"encoding/hex"
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

// appendBlank appends "_:b", the call's prefix bp (see blankPrefix) and
// a label made of letters, digits and _xx escapes of every other byte:
// injective, valid in SPARQL and N-Triples, and needing no table (a
// snapshot's labels are not held in memory).
func appendBlank(b []byte, bp, label string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, "_:b"...)
	b = append(b, bp...)
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

// blankPrefix returns a fresh prefix for the blank node labels one call
// sends: 16 random hex digits and "_" (fixed length, so labels stay
// injective). The contract scopes labels to one call, and SPARQL gives a
// template's blank nodes fresh identities per request, but a Graph Store
// that keeps the labels of the N-Triples it receives (Oxigraph's server
// does) would join _:b1 of every snapshot and every collection: with the
// prefix, labels sent in two calls never meet.
func blankPrefix() string {
	var r [8]byte
	rand.Read(r[:])
	return hex.EncodeToString(r[:]) + "_"
}

// appendTerm appends t, a blank node labelled with the call's prefix bp.
func appendTerm(b []byte, t rdf.Term, bp string) ([]byte, error) {
	switch t.Kind {
	case rdf.KindIRI:
		return appendIRI(b, t.Value)
	case rdf.KindBlank:
		return appendBlank(b, bp, t.Value), nil
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

// appendTriple appends "s p o .\n", blank nodes labelled with the call's
// prefix bp.
func appendTriple(b []byte, t rdf.Triple, bp string) ([]byte, error) {
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
		if b, err = appendTerm(b, x, bp); err != nil {
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
