package aggstoreurl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/boltstore"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/pgstore"
	"github.com/resourcesync-go/resourcesync/internal/location"
)

// Errors of Parse; match them with errors.Is.
var (
	ErrNoPath = location.ErrNoPath // "bolt:" without a directory
	ErrScheme = location.ErrScheme // a scheme no one registered
)

// DefaultDir is the state's directory under the root when no URL is
// given; FileName the bolt file in its directory.
const (
	DefaultDir = ".aggregate"
	FileName   = "aggregate.db"
)

// An Opener opens (or creates) the state at u. A scheme registers its
// Opener once, with Register.
type Opener func(ctx context.Context, u URL) (aggstore.Store, error)

var registry = location.New[Opener]("aggregator state", ErrScheme)

// Register makes scheme open with o; a scheme registers once (a second
// registration panics). The built-in schemes are registered by this
// package: file and bolt (package boltstore, DIR/aggregate.db),
// postgres and postgresql (package pgstore).
func Register(scheme string, o Opener) { registry.Register(scheme, o) }

// Schemes lists the registered schemes, sorted.
func Schemes() []string { return registry.Schemes() }

func init() {
	registry.RegisterEach(openBolt, location.LocalSchemes...)
	registry.RegisterEach(openPostgres, location.PostgresSchemes...)
}

// URL is a parsed state location.
type URL struct {
	// Scheme is the location's scheme: "file" for a path or file:///path
	// (and for the default), "bolt", "postgres", ...
	Scheme string
	// Dir is the directory of the bolt file; "" for the other schemes.
	Dir string
	loc location.Location
}

// Parse parses raw; root is the directory of the default ("").
func Parse(raw, root string) (URL, error) {
	if raw == "" {
		l := location.Path(filepath.Join(root, DefaultDir))
		return URL{Scheme: l.Scheme, Dir: l.Rest, loc: l}, nil
	}
	_, l, err := registry.Lookup(raw)
	if err != nil {
		return URL{}, fmt.Errorf("aggregator state %q: %w", Redact(raw), err)
	}
	return URL{Scheme: l.Scheme, Dir: l.Dir(), loc: l}, nil
}

// Postgres reports whether u names a PostgreSQL database.
func (u URL) Postgres() bool { return u.loc.Postgres() }

// String is u for messages: the bolt file's path, or the URL with its
// passwords hidden.
func (u URL) String() string {
	if u.Dir != "" {
		return filepath.Join(u.Dir, FileName)
	}
	return u.loc.String()
}

// Open opens (or creates) the state u names.
func (u URL) Open(ctx context.Context) (aggstore.Store, error) {
	open, err := registry.Of(u.loc)
	if err != nil {
		return nil, err
	}
	return open(ctx, u)
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
func Redact(s string) string { return location.Redact(s) }

func openBolt(_ context.Context, u URL) (aggstore.Store, error) {
	if err := os.MkdirAll(u.Dir, 0o700); err != nil {
		return nil, err
	}
	st, err := boltstore.Open(filepath.Join(u.Dir, FileName), nil)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func openPostgres(ctx context.Context, u URL) (aggstore.Store, error) {
	st, err := pgstore.Open(ctx, u.loc.Raw, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err) // pgstore's errors do not carry the password
	}
	return st, nil
}
