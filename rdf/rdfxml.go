package rdf

import (
	"io"
	"iter"
)

// TODO(rdf-syntax): replace with the real RDF/XML reader and writer.
func parseRDFXML(r io.Reader, base string) iter.Seq2[Triple, error] {
	return func(yield func(Triple, error) bool) { yield(Triple{}, ErrUnsupported) }
}

func newRDFXMLWriter(w io.Writer) Writer { return nil }
