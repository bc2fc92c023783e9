package hubstoreurl

import (
	"context"
	"os"
	"path/filepath"

	"github.com/resourcesync-go/resourcesync/internal/stateurl"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/boltstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/pgstore"
)

// Errors of Parse; match them with errors.Is.
var (
	ErrNoPath = stateurl.ErrNoPath // "bolt:" without a directory
	ErrScheme = stateurl.ErrScheme // neither bolt: nor postgres://
)

// FileName is the embedded store's file in its directory.
const FileName = "hub.db"

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

// Open opens (or creates) the state. hub.Open opens the embedded store
// itself from Config.StateDir; Open is for callers that pass
// Config.Store, or that open a hub's state without a hub (an import).
func (u URL) Open(ctx context.Context) (hubstore.Store, error) {
	if u.Postgres() {
		st, err := pgstore.Open(ctx, u.raw, nil)
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	if err := os.MkdirAll(u.Dir, 0o700); err != nil {
		return nil, err
	}
	st, err := boltstore.Open(filepath.Join(u.Dir, FileName), nil)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Open parses s and opens the state.
func Open(ctx context.Context, s string) (hubstore.Store, error) {
	u, err := Parse(s)
	if err != nil {
		return nil, err
	}
	return u.Open(ctx)
}

// Redact hides the passwords of a store URL for messages.
func Redact(s string) string { return stateurl.Redact(s) }
