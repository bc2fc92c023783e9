package rdf

import (
	"io"
	"iter"
)

// TODO(rdf-core): replace with the real N-Triples reader and writer.
func parseNTriples(r io.Reader) iter.Seq2[Triple, error] {
	return func(yield func(Triple, error) bool) { yield(Triple{}, ErrUnsupported) }
}

func newNTriplesWriter(w io.Writer) Writer { return nil }
