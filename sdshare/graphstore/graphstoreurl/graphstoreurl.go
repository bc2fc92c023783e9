package graphstoreurl

import (
	"context"
	"fmt"

	"github.com/resourcesync-go/resourcesync/internal/stateurl"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
)

// Errors of Parse; match them with errors.Is.
var (
	ErrNoPath = stateurl.ErrNoPath // "bolt:" without a directory
	ErrScheme = stateurl.ErrScheme // a postgres:// URL, or empty
)

// URL is a parsed store URL.
type URL struct {
	Dir string // the store's directory
}

// Parse parses s (see the package documentation).
func Parse(s string) (URL, error) {
	u, err := stateurl.Parse(s, true)
	if err != nil {
		return URL{}, err
	}
	if u.Kind != stateurl.Bolt {
		return URL{}, fmt.Errorf("%w: %s: no PostgreSQL graph store", ErrScheme, stateurl.Redact(s))
	}
	return URL{Dir: u.Path}, nil
}

// Open opens (or creates) the store.
func (u URL) Open(_ context.Context) (graphstore.Store, error) {
	st, err := boltstore.OpenDir(u.Dir, nil)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Open parses s and opens the store.
func Open(ctx context.Context, s string) (graphstore.Store, error) {
	u, err := Parse(s)
	if err != nil {
		return nil, err
	}
	return u.Open(ctx)
}
