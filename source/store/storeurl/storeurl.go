package storeurl

import (
	"context"

	"github.com/resourcesync-go/resourcesync/internal/stateurl"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	"github.com/resourcesync-go/resourcesync/source/store/pgstore"
)

// Errors of Parse; match them with errors.Is.
var (
	ErrNoPath = stateurl.ErrNoPath // "bolt:" without a directory
	ErrScheme = stateurl.ErrScheme // neither bolt: nor postgres://
)

// URL is a parsed store URL.
type URL struct {
	// Dir is the directory of a bolt: URL; "" for PostgreSQL.
	Dir string
	raw string
}

// Parse parses s (see the package documentation).
func Parse(s string) (URL, error) {
	u, err := stateurl.Parse(s, false)
	if err != nil {
		return URL{}, err
	}
	return URL{Dir: u.Path, raw: s}, nil
}

// Postgres reports whether u names a PostgreSQL database.
func (u URL) Postgres() bool { return u.Dir == "" && u.raw != "" }

// String returns u with its passwords hidden.
func (u URL) String() string { return Redact(u.raw) }

// Open opens (or creates) set's state. A PostgreSQL store is a
// store.Shared; the Stores of one process on one URL share a connection
// pool.
func (u URL) Open(ctx context.Context, set string) (store.Store, error) {
	if u.Postgres() {
		st, err := pgstore.Open(ctx, u.raw, set, nil)
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	st, err := bolt.OpenSet(u.Dir, set, nil)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Open parses s and opens set's state.
func Open(ctx context.Context, s, set string) (store.Store, error) {
	u, err := Parse(s)
	if err != nil {
		return nil, err
	}
	return u.Open(ctx, set)
}

// Redact hides the passwords of a store URL (userinfo, password= and
// sslpassword= parameters, a key=value connection string's) for
// messages.
func Redact(s string) string { return stateurl.Redact(s) }
