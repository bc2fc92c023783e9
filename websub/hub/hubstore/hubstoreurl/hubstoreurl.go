package hubstoreurl

import (
	"context"
	"os"
	"path/filepath"

	"github.com/resourcesync-go/resourcesync/internal/location"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/boltstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/memstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/pgstore"
)

// Errors of Parse and Open; match them with errors.Is.
var (
	ErrNoPath = location.ErrNoPath // "bolt:" without a directory
	ErrScheme = location.ErrScheme // a scheme no one registered
)

// FileName is the embedded store's file in its directory.
const FileName = "hub.db"

// Options tune URL.OpenWith; nil is the default.
type Options struct {
	// NoSync skips the embedded store's fsync on commit (benchmarks and
	// tests only).
	NoSync bool
}

// An Opener opens (or creates) the hub state at u. A scheme registers its
// Opener once, with Register.
type Opener func(ctx context.Context, u URL, o Options) (hubstore.Store, error)

var registry = location.New[Opener]("hub store", ErrScheme)

// Register makes scheme open with o; a scheme registers once (a second
// registration panics). The built-in schemes are registered by this
// package: file and bolt (package boltstore, DIR/hub.db), postgres and
// postgresql (package pgstore), mem (package memstore).
func Register(scheme string, o Opener) { registry.Register(scheme, o) }

// Schemes lists the registered schemes, sorted.
func Schemes() []string { return registry.Schemes() }

func init() {
	registry.RegisterEach(openBolt, location.LocalSchemes...)
	registry.RegisterEach(openPostgres, location.PostgresSchemes...)
	Register("mem", openMem)
}

// URL is a parsed store location.
type URL struct {
	// Scheme is the location's scheme: "file" for a path or file:///path,
	// "bolt", "postgres", "mem", ...
	Scheme string
	// Dir is the directory of the embedded store (a path, file:///path,
	// bolt:DIR); "" for the other schemes.
	Dir string
	loc location.Location
}

// Parse parses s (see the package documentation); an unknown scheme is
// ErrScheme, naming the known ones.
func Parse(s string) (URL, error) {
	_, l, err := registry.Lookup(s)
	if err != nil {
		return URL{}, err
	}
	return URL{Scheme: l.Scheme, Dir: l.Dir(), loc: l}, nil
}

// Local is the URL of the embedded store in dir, taken as a path (not
// parsed): the default of a hub's state (hub.Config.StateDir).
func Local(dir string) URL {
	l := location.Path(dir)
	return URL{Scheme: l.Scheme, Dir: dir, loc: l}
}

// Postgres reports whether u names a PostgreSQL database.
func (u URL) Postgres() bool { return u.loc.Postgres() }

// Embedded reports whether u names the embedded store in a directory
// (Dir).
func (u URL) Embedded() bool { return u.Dir != "" }

// String returns u with its passwords hidden.
func (u URL) String() string { return u.loc.String() }

// Open opens (or creates) the state. hub.Open opens the embedded store
// itself from Config.StateDir (through Local); Open is for callers that
// pass Config.Store, or that open a hub's state without a hub (an
// import).
func (u URL) Open(ctx context.Context) (hubstore.Store, error) { return u.OpenWith(ctx, nil) }

// OpenWith is Open with options.
func (u URL) OpenWith(ctx context.Context, o *Options) (hubstore.Store, error) {
	open, err := registry.Of(u.loc)
	if err != nil {
		return nil, err
	}
	var opts Options
	if o != nil {
		opts = *o
	}
	return open(ctx, u, opts)
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
func Redact(s string) string { return location.Redact(s) }

func openBolt(_ context.Context, u URL, o Options) (hubstore.Store, error) {
	if err := os.MkdirAll(u.Dir, 0o700); err != nil {
		return nil, err
	}
	st, err := boltstore.Open(filepath.Join(u.Dir, FileName), &boltstore.Options{NoSync: o.NoSync})
	if err != nil {
		return nil, err
	}
	return st, nil
}

func openPostgres(ctx context.Context, u URL, _ Options) (hubstore.Store, error) {
	st, err := pgstore.Open(ctx, u.loc.Raw, nil)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// mems are the in-memory states of the process by name: mem:NAME opened
// twice is one state (two nodes of a hub cluster).
var mems location.Named[*memstore.DB]

func openMem(_ context.Context, u URL, _ Options) (hubstore.Store, error) {
	return mems.Get(u.loc, func() *memstore.DB { return memstore.New(nil) }).Open(), nil
}
