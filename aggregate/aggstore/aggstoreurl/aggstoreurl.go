package aggstoreurl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/boltstore"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/pgstore"
	"github.com/resourcesync-go/resourcesync/internal/stateurl"
)

// Errors of Parse; match them with errors.Is.
var (
	ErrNoPath = stateurl.ErrNoPath // "bolt:" without a directory
	ErrScheme = stateurl.ErrScheme // neither "", bolt: nor postgres://
)

// DefaultDir is the state's directory under the root when no URL is
// given; FileName the bolt file in its directory.
const (
	DefaultDir = ".aggregate"
	FileName   = "aggregate.db"
)

// URL is a parsed state URL.
type URL struct {
	// Dir is the directory of the bolt file; "" for PostgreSQL.
	Dir string
	raw string // the postgres URL
}

// Parse parses raw; root is the directory of the default ("").
func Parse(raw, root string) (URL, error) {
	if raw == "" {
		return URL{Dir: filepath.Join(root, DefaultDir)}, nil
	}
	u, err := stateurl.Parse(raw, false)
	if err != nil {
		return URL{}, fmt.Errorf("aggregator state %q: %w (want bolt:DIR or postgres://...)", Redact(raw), err)
	}
	if u.Kind == stateurl.Postgres {
		return URL{raw: raw}, nil
	}
	return URL{Dir: u.Path}, nil
}

// Postgres reports whether u names a PostgreSQL database.
func (u URL) Postgres() bool { return u.raw != "" }

// String is u for messages: the bolt file's path, or the URL with its
// passwords hidden.
func (u URL) String() string {
	if u.Postgres() {
		return Redact(u.raw)
	}
	return filepath.Join(u.Dir, FileName)
}

// Open opens (or creates) the state u names.
func (u URL) Open(ctx context.Context) (aggstore.Store, error) {
	if u.Postgres() {
		st, err := pgstore.Open(ctx, u.raw, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", u, err) // pgx's errors do not carry the password
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

// Open parses raw and opens the state; name is for messages (see
// URL.String).
func Open(ctx context.Context, raw, root string) (st aggstore.Store, name string, err error) {
	u, err := Parse(raw, root)
	if err != nil {
		return nil, "", err
	}
	st, err = u.Open(ctx)
	if err != nil {
		return nil, u.String(), err
	}
	return st, u.String(), nil
}

// Redact hides the passwords of a state URL for messages.
func Redact(s string) string { return stateurl.Redact(s) }
