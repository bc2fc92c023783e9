package storeurl

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/location"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	"github.com/resourcesync-go/resourcesync/source/store/memstore"
	"github.com/resourcesync-go/resourcesync/source/store/pgstore"
)

// Errors of Parse and Open; match them with errors.Is.
var (
	ErrNoPath = location.ErrNoPath // "bolt:" without a directory
	ErrScheme = location.ErrScheme // a scheme no one registered
)

// Options tune URL.OpenWith; nil is the default. The first three are the
// embedded store's (bolt.Options).
type Options struct {
	LockTimeout time.Duration
	NoSync      bool
	ReadOnly    bool
	// FileName is the embedded store's file for set, relative to the
	// directory. Default SET/state.db, the layout of a Source's StateDir;
	// the SDShare server keeps SET.state.
	FileName func(set string) string
}

// An Opener opens (or creates) set's state at u. A scheme registers its
// Opener once, with Register.
type Opener func(ctx context.Context, u URL, set string, o Options) (store.Store, error)

var registry = location.New[Opener]("Source store", ErrScheme)

// Register makes scheme open with o; a scheme registers once (a second
// registration panics). The built-in schemes are registered by this
// package: file and bolt (the embedded store in a directory), postgres
// and postgresql (package pgstore), mem (package memstore).
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
// parsed): the default of a Source's state.
func Local(dir string) URL {
	l := location.Path(dir)
	return URL{Scheme: l.Scheme, Dir: dir, loc: l}
}

// Postgres reports whether u names a PostgreSQL database.
func (u URL) Postgres() bool { return u.loc.Postgres() }

// Embedded reports whether u names the embedded store in a directory
// (Dir); the other stores live elsewhere (a database, the process's
// memory).
func (u URL) Embedded() bool { return u.Dir != "" }

// String returns u with its passwords hidden.
func (u URL) String() string { return u.loc.String() }

// Location is u as given; it may hold a password (see String).
func (u URL) Location() string { return u.loc.Raw }

// Open opens (or creates) set's state. A PostgreSQL store is a
// store.Shared; the Stores of one process on one URL share a connection
// pool.
func (u URL) Open(ctx context.Context, set string) (store.Store, error) {
	return u.OpenWith(ctx, set, nil)
}

// OpenWith is Open with options.
func (u URL) OpenWith(ctx context.Context, set string, o *Options) (store.Store, error) {
	open, err := registry.Of(u.loc)
	if err != nil {
		return nil, err
	}
	var opts Options
	if o != nil {
		opts = *o
	}
	return open(ctx, u, set, opts)
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
func Redact(s string) string { return location.Redact(s) }

func openBolt(_ context.Context, u URL, set string, o Options) (store.Store, error) {
	bo := &bolt.Options{LockTimeout: o.LockTimeout, NoSync: o.NoSync, ReadOnly: o.ReadOnly}
	var (
		db  *bolt.DB
		err error
	)
	if o.FileName == nil {
		db, err = bolt.OpenSet(u.Dir, set, bo)
	} else {
		p := filepath.Join(u.Dir, o.FileName(set))
		if !o.ReadOnly {
			err = os.MkdirAll(filepath.Dir(p), 0o755)
		}
		if err == nil {
			db, err = bolt.Open(p, bo)
		}
	}
	if err != nil {
		return nil, err
	}
	return db, nil
}

func openPostgres(ctx context.Context, u URL, set string, _ Options) (store.Store, error) {
	st, err := pgstore.Open(ctx, u.loc.Raw, set, nil)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// mems are the in-memory states of the process by name.
var mems location.Named[*memstore.DB]

func openMem(_ context.Context, u URL, set string, _ Options) (store.Store, error) {
	return mems.Get(u.loc, memstore.New).Open(set), nil
}
