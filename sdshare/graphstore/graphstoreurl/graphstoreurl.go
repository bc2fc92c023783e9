package graphstoreurl

import (
	"context"

	"github.com/resourcesync-go/resourcesync/internal/location"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
)

// Errors of Parse; match them with errors.Is.
var (
	ErrNoPath = location.ErrNoPath // "bolt:" without a directory
	ErrScheme = location.ErrScheme // a scheme no one registered (postgres://), or empty
)

// An Opener opens (or creates) the graph store at u. A scheme registers
// its Opener once, with Register.
type Opener func(ctx context.Context, u URL) (graphstore.Store, error)

var registry = location.New[Opener]("graph store", ErrScheme)

// Register makes scheme open with o; a scheme registers once (a second
// registration panics). The built-in schemes are registered by this
// package: file and bolt (package boltstore, DIR/graph.db).
func Register(scheme string, o Opener) { registry.Register(scheme, o) }

// Schemes lists the registered schemes, sorted.
func Schemes() []string { return registry.Schemes() }

func init() {
	registry.RegisterEach(openBolt, location.LocalSchemes...)
}

// URL is a parsed store location.
type URL struct {
	// Scheme is the location's scheme: "file" for a path or file:///path,
	// "bolt", ...
	Scheme string
	// Dir is the store's directory (a path, file:///path, bolt:DIR); ""
	// for the other schemes.
	Dir string
	loc location.Location
}

// Parse parses s (see the package documentation).
func Parse(s string) (URL, error) {
	_, l, err := registry.Lookup(s)
	if err != nil {
		return URL{}, err
	}
	return URL{Scheme: l.Scheme, Dir: l.Dir(), loc: l}, nil
}

// String returns u with its passwords hidden.
func (u URL) String() string { return u.loc.String() }

// Open opens (or creates) the store.
func (u URL) Open(ctx context.Context) (graphstore.Store, error) {
	open, err := registry.Of(u.loc)
	if err != nil {
		return nil, err
	}
	return open(ctx, u)
}

// Open parses s and opens the store.
func Open(ctx context.Context, s string) (graphstore.Store, error) {
	u, err := Parse(s)
	if err != nil {
		return nil, err
	}
	return u.Open(ctx)
}

func openBolt(_ context.Context, u URL) (graphstore.Store, error) {
	st, err := boltstore.OpenDir(u.Dir, nil)
	if err != nil {
		return nil, err
	}
	return st, nil
}
