// Package store defines the state of a ResourceSync Source: the inventory
// of resources as last seen, the change journal from which Change Lists and
// Change Dumps are derived, and a small key-value meta area.
//
// # Model
//
// The inventory holds one Resource per path. The journal is an append-only
// sequence of Change records numbered 1, 2, 3, ... in the order they were
// applied; their datetimes never decrease with the sequence number. Every
// Change also updates the inventory (created and updated put the resource,
// deleted removes it) in the same atomic transaction, so that at every
// committed state the inventory equals the replay of the journal: for each
// path, the resource carried by its last record, or absent if that record is
// a delete — applied on top of the baseline. The baseline is what the
// first scan of a collection found: it is put into the inventory with
// Batch.Baseline (no journal records, only while the journal is empty) and
// its completion is recorded under the meta key MetaBaseline, whose time is
// where the first Change List starts: Change Lists describe the changes
// after the baseline, not the collection itself. Stat-only updates (a file touched without changing its bytes) go
// to the inventory without a journal record; they never change the content
// metadata a replay would yield, only the filesystem fields.
//
// # Paths
//
// A path is a slash-separated path relative to the collection root, stored
// and compared as raw bytes: it may contain invalid UTF-8 and is never
// normalised. Go strings hold arbitrary bytes, so Path is a string.
//
// # Times
//
// Implementations keep times to the nanosecond and return them in UTC. The
// zero time.Time is preserved as zero.
//
// # Implementations
//
// The embedded default lives in package bolt. Any implementation must pass
// the contract suite in package storetest.
package store

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

// Errors returned by a Store. Implementations wrap them with context; match
// them with errors.Is.
var (
	// ErrNotFound: no inventory record or meta value for the key.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: a Change does not fit the inventory (created for a path
	// that exists, updated or deleted for a path that does not, an
	// invalid kind or an empty path). The whole batch is rejected.
	ErrConflict = errors.New("store: change conflicts with the inventory")
	// ErrTimeOrder: a Change's datetime is earlier than the datetime of the
	// last journal record (or of an earlier change in the same batch). The
	// whole batch is rejected. Callers use max(now, LastTime) to avoid it.
	ErrTimeOrder = errors.New("store: change datetime before the journal's last datetime")
	// ErrLocked: another process (or another Store in this process) holds
	// the state open.
	ErrLocked = errors.New("store: state is locked by another user")
	// ErrCorrupt: the state cannot be read: it is not a state file, its
	// format is unknown, or its pages are damaged.
	ErrCorrupt = errors.New("store: state is corrupt")
	// ErrNoSpace: the state could not be written because the disk (or the
	// quota) is full. Nothing of the failed batch was committed.
	ErrNoSpace = errors.New("store: no space left for the state")
	// ErrClosed: the Store was closed.
	ErrClosed = errors.New("store: closed")
)

// Resource is the inventory record of one resource.
type Resource struct {
	Path string // relative slash-separated path; raw bytes, may be invalid UTF-8

	// Filesystem fields: what a rescan compares to skip unchanged files
	// without reading them.
	Size    int64
	ModTime time.Time // file mtime
	// Inode is the file's inode number (0 where the platform has none).
	// For a collection read through a storage.Content (a bucket), it
	// holds scan.VersionHash of the object's Version (its ETag): a 64-bit
	// hash, compared with Size, so no schema of the four stores had to
	// change; 0 there means "read the object again".
	Inode uint64

	// Content metadata, as published.
	MD5     [16]byte
	SHA256  [32]byte
	Type    string    // media type, e.g. "text/plain; charset=utf-8"
	LastMod time.Time // the resource's lastmod
	Changed time.Time // datetime of the last journal record for this path
}

// Change is one journal record. For created and updated, Resource is the
// resource after the change; for deleted, it is the last known resource
// (Path always equals the record's path).
type Change struct {
	Seq      uint64 // assigned by Apply; ignored on input
	Kind     rs.Change
	Time     time.Time // datetime of the change
	Resource Resource
}

// Path returns the path the change is about.
func (c Change) Path() string { return c.Resource.Path }

// Batch is one atomic unit of state change.
type Batch struct {
	// Changes are appended to the journal in order and applied to the
	// inventory; for created and updated the inventory record's Changed
	// field is set to the change's Time.
	Changes []Change
	// Touch replaces inventory records without a journal record, after
	// Changes are applied. Each path must exist in the inventory
	// (ErrConflict otherwise). Callers use it for stat-only updates
	// (ModTime, Inode) and must keep the content metadata (Size, hashes,
	// Type, LastMod, Changed) as journaled, or the inventory would no
	// longer equal the journal's replay.
	Touch []Resource
	// Meta values are set (a nil value deletes the key) in the same
	// transaction, e.g. a Change List boundary that must move together
	// with the journal.
	Meta map[string][]byte
	// Baseline applies Changes to the inventory (same rules, Changed set
	// to each change's Time) without journal records: the first scan of a
	// collection. Allowed only while the journal is empty (ErrConflict
	// otherwise; a Baseline batch without changes writes only its Touch
	// and Meta and is accepted at any time); Apply then returns (0, 0).
	Baseline bool
}

// MetaBaseline is the meta key under which the scanner records, in the
// batch that completes the baseline, the baseline's datetime (RFC 3339
// with nanoseconds, UTC). Journal records are never earlier than it.
const MetaBaseline = "baseline"

// BaselineTime returns the datetime recorded under MetaBaseline; ok is
// false when no baseline was recorded (a first scan not yet complete, or
// a state whose journal started before baselines existed).
func BaselineTime(ctx context.Context, st Store) (t time.Time, ok bool, err error) {
	b, err := st.GetMeta(ctx, MetaBaseline)
	if errors.Is(err, ErrNotFound) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	t, err = time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%w: meta %s: %w", ErrCorrupt, MetaBaseline, err)
	}
	return t.UTC(), true, nil
}

// FormatBaseline formats t as the value of MetaBaseline.
func FormatBaseline(t time.Time) []byte { return []byte(t.UTC().Format(time.RFC3339Nano)) }

// Stats summarises the state.
type Stats struct {
	Resources int       // records in the inventory
	FirstSeq  uint64    // seq of the first journal record, 0 if empty
	LastSeq   uint64    // seq of the last journal record, 0 if empty
	LastTime  time.Time // datetime of the last journal record, zero if empty
}

// Store is the Source state. Implementations are safe for concurrent use by
// multiple goroutines. Writes are serialised; a Store does not coordinate
// semantic writers (two scanners computing diffs against the same
// inventory), which is the caller's job: use one writer per Store.
type Store interface {
	// Apply commits b atomically: either every change, touch and meta
	// value of b is durable when Apply returns nil, or none of it is
	// visible, also after a crash (kill -9, power loss) at any moment.
	// Changes get consecutive sequence numbers following the last journal
	// record; Apply returns the first and last assigned (0, 0 when b has
	// no changes). Errors: ErrConflict, ErrTimeOrder (validation, nothing
	// written), ErrNoSpace, ErrClosed, or an I/O error; after any error the
	// state is as before the call.
	Apply(ctx context.Context, b Batch) (first, last uint64, err error)

	// Get returns the inventory record of path, or ErrNotFound.
	Get(ctx context.Context, path string) (Resource, error)

	// Resources yields every inventory record in ascending byte order of
	// Path, each exactly once, from one consistent snapshot taken when the
	// iteration starts: Apply calls made during the iteration are not seen.
	// An error is yielded once, with a zero Resource, and ends the
	// iteration. The loop body must not call Apply (an implementation may
	// hold a read transaction for the duration of the loop); collect first.
	Resources(ctx context.Context) iter.Seq2[Resource, error]

	// ResourcesIn yields the inventory records whose Path p satisfies
	// from <= p and (to == "" or p < to), in ascending byte order, each at
	// most once. Unlike Resources it reads in bounded pages, each from its
	// own snapshot, and holds no transaction while the loop body runs: the
	// body may call Apply, and a record not yet yielded may be seen as
	// before or after a concurrent Apply. Memory does not grow with the
	// inventory: this is what a scan merges against and what a Resource
	// List part is written from. An error is yielded once and ends the
	// iteration.
	ResourcesIn(ctx context.Context, from, to string) iter.Seq2[Resource, error]

	// Journal yields the journal records with seq >= from in ascending seq
	// order. Records appended during the iteration may or may not be
	// yielded; records committed before it starts are yielded exactly
	// once. The loop body may call Apply. An error is yielded once and
	// ends the iteration. Memory does not grow with the journal.
	Journal(ctx context.Context, from uint64) iter.Seq2[Change, error]

	// JournalBetween yields the journal records whose datetime t satisfies
	// from <= t < until, in ascending seq order (and so non-decreasing
	// datetime), with the same guarantees as Journal. A zero until means no
	// upper bound.
	JournalBetween(ctx context.Context, from, until time.Time) iter.Seq2[Change, error]

	// Stats returns counts and the journal's last seq and datetime.
	Stats(ctx context.Context) (Stats, error)

	// GetMeta returns the value stored under key, or ErrNotFound. The
	// caller may keep and modify the returned slice.
	GetMeta(ctx context.Context, key string) ([]byte, error)

	// PutMeta sets key to value atomically; a nil value deletes the key.
	PutMeta(ctx context.Context, key string, value []byte) error

	// Close releases the state (and its lock). Methods called after Close
	// return ErrClosed. Close is idempotent.
	Close() error
}
