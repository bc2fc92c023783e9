package rdf

import (
	"errors"
	"io"
	"iter"
)

// Format is an RDF serialisation.
type Format uint8

const (
	NTriples Format = iota + 1 // application/n-triples (also text/plain)
	Turtle                     // text/turtle
	RDFXML                     // application/rdf+xml
)

// ErrUnsupported is returned for a Format this package cannot read or write.
var ErrUnsupported = errors.New("rdf: unsupported format")

// Writer writes triples in one format. Close flushes and ends the document
// (it does not close the underlying io.Writer).
type Writer interface {
	Write(Triple) error
	Close() error
}

// Parse yields the triples of the document r in format f. Relative IRIs are
// resolved against base (which may be ""). The first syntax error is
// yielded once and ends the iteration; it says where (line, column or
// byte offset). A document beyond a reader limit (a token, the nesting,
// MaxRetainedBytes) fails with an error matching ErrLimit.
func Parse(r io.Reader, f Format, base string) iter.Seq2[Triple, error] {
	switch f {
	case NTriples:
		return parseNTriples(r)
	case Turtle:
		return parseTurtle(r, base)
	case RDFXML:
		return parseRDFXML(r, base)
	}
	return func(yield func(Triple, error) bool) { yield(Triple{}, ErrUnsupported) }
}

// NewWriter returns a Writer of format f on w.
func NewWriter(w io.Writer, f Format) (Writer, error) {
	switch f {
	case NTriples:
		return newNTriplesWriter(w), nil
	case Turtle:
		return newTurtleWriter(w), nil
	case RDFXML:
		return newRDFXMLWriter(w), nil
	}
	return nil, ErrUnsupported
}
