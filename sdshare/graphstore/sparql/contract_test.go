package sparql

import (
	"testing"

	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/graphstoretest"
)

// TestContract runs the graph store contract suite against Virtuoso with
// the Graph Store Protocol. Without it (snapshots as one SPARQL Update
// template) the suite's 3,000-triple snapshot fails: Virtuoso's SPARQL
// compiler runs out of memory ("SP030 … memory exhausted") on a template
// that size with blank nodes; TestRoundTrip covers that mode with small
// snapshots.
func TestContract(t *testing.T) {
	graphstoretest.Run(t, func(t *testing.T) graphstore.Store {
		s, _ := open(t, true)
		return s
	})
}
