// Package graphstore defines the RDF store an SDShare client keeps in step
// with a server: one named graph per collection, replaced whole by a
// snapshot and changed one resource at a time by fragments.
//
// # Contract
//
// Graph names are absolute IRIs. Blank node labels in the triples given to
// ReplaceGraph and ApplyFragment are scoped to that one call: the store gives
// them fresh identities, so _:b1 of two fragments never merge, and a label
// the store returns from Triples or Fragment is stable only within that
// call. Every write is atomic: after a crash (kill -9) at any moment, a
// reader sees the graph as before the call or as after it, never between.
// Implementations are safe for concurrent use. Every implementation passes
// the contract suite in package graphstoretest.
package graphstore

import (
	"context"
	"errors"
	"iter"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// Errors; implementations wrap them, match with errors.Is.
var (
	ErrClosed  = errors.New("graphstore: closed")
	ErrLocked  = errors.New("graphstore: store is locked by another process")
	ErrCorrupt = errors.New("graphstore: store is corrupt")
)

// Store is an RDF quad store as an SDShare client needs it.
type Store interface {
	// ReplaceGraph atomically replaces the content of graph g with the
	// triples yielded by ts (a snapshot load, SD-CLI-3). Memory does not grow
	// with the number of triples. If ts yields an error, or ctx ends, g is
	// left as it was and the error is returned.
	ReplaceGraph(ctx context.Context, g string, ts iter.Seq2[rdf.Triple, error]) error

	// ApplyFragment replaces resource r's fragment in g (SD-CLI-12): it
	// deletes r's statements and, recursively, those of the blank nodes
	// they reach (SD-SRV-26, cycle-safe), then inserts ts with fresh blank
	// nodes, in one transaction. An empty ts deletes r. Applying the same
	// fragment twice has the effect of once.
	ApplyFragment(ctx context.Context, g string, r rdf.Term, ts []rdf.Triple) error

	// Fragment returns r's fragment in g by SD-SRV-26 (nil when r has no
	// statements).
	Fragment(ctx context.Context, g string, r rdf.Term) ([]rdf.Triple, error)

	// Triples yields every triple of g once, from one consistent snapshot.
	// An unknown graph yields nothing.
	Triples(ctx context.Context, g string) iter.Seq2[rdf.Triple, error]

	// Graphs returns the names of the non-empty graphs, sorted.
	Graphs(ctx context.Context) ([]string, error)

	// Close releases the store. Close is idempotent.
	Close() error
}
