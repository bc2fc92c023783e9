package store

import "context"

// Shared is implemented by a Store that several processes open at once
// (the PostgreSQL store): Source replicas on one database. The embedded
// store is opened by one process only (ErrLocked otherwise) and does not
// implement it; callers treat such a store as always led and never changed
// by anyone else.
type Shared interface {
	Store

	// Lead blocks until this Store holds the writer role for its set of
	// resources (the scanner role: exactly one holder among all
	// processes), ctx ends (ctx.Err()), or an error. The role is held
	// until release is called, the Store is closed, or the process dies:
	// a holder killed with SIGKILL frees the role within seconds. lost is
	// closed when the role is lost without release (the connection that
	// holds it broke); the holder must stop writing at once.
	Lead(ctx context.Context) (lost <-chan struct{}, release func(), err error)

	// Watch returns a channel that receives a value after commits by any
	// process to this set's state (Apply, PutMeta), coalesced: one value
	// may stand for many commits, and a reader that is slow misses none
	// in the sense that it gets a value after the last of them. The
	// channel is closed when ctx ends or the Store is closed. Watching
	// costs no polling of the data (PostgreSQL: LISTEN/NOTIFY).
	Watch(ctx context.Context) (<-chan struct{}, error)
}

// PathLimiter is implemented by a Store that cannot hold a path longer
// than MaxPathBytes bytes (pgstore: a B-tree index row). The scanner skips
// a longer path as it skips a file it cannot read (logged, counted in
// scan.Stats.Skipped) instead of failing every batch that holds it: one
// such file must not stop the whole Source.
type PathLimiter interface {
	MaxPathBytes() int
}
