package rdf

import (
	"io"
	"iter"
)

// TODO(rdf-syntax): replace with the real Turtle reader and writer.
func parseTurtle(r io.Reader, base string) iter.Seq2[Triple, error] {
	return func(yield func(Triple, error) bool) { yield(Triple{}, ErrUnsupported) }
}

func newTurtleWriter(w io.Writer) Writer { return nil }
