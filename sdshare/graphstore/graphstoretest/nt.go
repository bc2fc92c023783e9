package graphstoretest

import (
	"fmt"
	"strings"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// NT parses an N-Triples document of the suite's own source; it panics on
// a syntax error, which is a bug in the suite.
func NT(doc string) []rdf.Triple {
	var out []rdf.Triple
	for t, err := range rdf.Parse(strings.NewReader(doc), rdf.NTriples, "") {
		if err != nil {
			panic(fmt.Sprintf("graphstoretest.NT: %v in\n%s", err, doc))
		}
		out = append(out, t)
	}
	return out
}

// Isomorphic reports whether a and b are the same graph up to blank node
// renaming: rdf.Isomorphic, kept here for the suite's users.
func Isomorphic(a, b []rdf.Triple) bool { return rdf.Isomorphic(a, b) }
