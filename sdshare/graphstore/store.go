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
// Arguments no RDF store can hold (an empty graph name, a resource that is
// not an IRI, a triple failing CheckTriple) fail with ErrInvalid before
// anything changes. Implementations are safe for concurrent use. Every implementation passes
// the contract suite in package graphstoretest.
//
// A store that can apply many fragments in one write implements
// BatchApplier too; ApplyFragments uses it, or ApplyFragment of each
// fragment in a store without it.
package graphstore

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// Errors; implementations wrap them, match with errors.Is.
var (
	ErrClosed  = errors.New("graphstore: closed")
	ErrLocked  = errors.New("graphstore: store is locked by another process")
	ErrCorrupt = errors.New("graphstore: store is corrupt")
	// ErrInvalid: an argument no RDF store can hold (see CheckTriple),
	// an empty graph name, or a resource r that is not an IRI.
	ErrInvalid = errors.New("graphstore: invalid argument")
)

// CheckTriple returns an error wrapping ErrInvalid unless t is an RDF
// triple: subject an IRI or blank node, predicate an IRI, object any term.
// Stores check every triple before they write any, so a bad triple fails
// the whole call.
func CheckTriple(t rdf.Triple) error {
	switch {
	case !t.S.IsIRI() && !t.S.IsBlank() || t.S.Value == "":
		return fmt.Errorf("%w: subject %q is not an IRI or blank node", ErrInvalid, t.S.Value)
	case !t.P.IsIRI() || t.P.Value == "":
		return fmt.Errorf("%w: predicate %q is not an IRI", ErrInvalid, t.P.Value)
	case t.O.IsZero() || t.O.Kind > rdf.KindLiteral || !t.O.IsLiteral() && t.O.Value == "":
		return fmt.Errorf("%w: object %q is not an RDF term", ErrInvalid, t.O.Value)
	}
	return nil
}

// CheckGraph returns an error wrapping ErrInvalid when g is empty.
func CheckGraph(g string) error {
	if g == "" {
		return fmt.Errorf("%w: empty graph name", ErrInvalid)
	}
	return nil
}

// CheckResource returns an error wrapping ErrInvalid when g is empty or r
// is not an IRI: an SDShare resource is always an IRI, and a blank node of
// the store has no identity outside one call.
func CheckResource(g string, r rdf.Term) error {
	if err := CheckGraph(g); err != nil {
		return err
	}
	if !r.IsIRI() || r.Value == "" {
		return fmt.Errorf("%w: resource %q is not an IRI", ErrInvalid, r.Value)
	}
	return nil
}

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
	// fragment twice has the effect of once. r must be an IRI and every
	// triple pass CheckTriple, else nothing changes and the error wraps
	// ErrInvalid.
	ApplyFragment(ctx context.Context, g string, r rdf.Term, ts []rdf.Triple) error

	// Fragment returns r's fragment in g by SD-SRV-26 (nil when r has no
	// statements). Its blank node labels are consistent within the result.
	// r must be an IRI (else ErrInvalid).
	Fragment(ctx context.Context, g string, r rdf.Term) ([]rdf.Triple, error)

	// Triples yields every triple of g once, from one consistent snapshot.
	// An unknown graph yields nothing. The snapshot may be held open until
	// the loop ends, so the loop body must not wait for a write to the
	// same store (collect first, then write).
	Triples(ctx context.Context, g string) iter.Seq2[rdf.Triple, error]

	// Graphs returns the names of the non-empty graphs, sorted.
	Graphs(ctx context.Context) ([]string, error)

	// Close releases the store. Close is idempotent.
	Close() error
}
