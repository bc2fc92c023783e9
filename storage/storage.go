package storage

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"
)

// Errors matched with errors.Is.
var (
	// ErrNotExist: no object under the key.
	ErrNotExist = errors.New("storage: no such object")
	// ErrExists: a conditional write (PutOptions.NoReplace or IfVersion)
	// found another object under the key; nothing was written.
	ErrExists = errors.New("storage: object exists or changed")
	// ErrBadKey: a key that ValidKey refuses.
	ErrBadKey = errors.New("storage: invalid key")
	// ErrRefused: the storage refused the operation for a reason a retry
	// will not change (a symbolic link in a local target, a policy).
	ErrRefused = errors.New("storage: refused")
	// ErrUnknownScheme: no implementation registered for the location's
	// scheme.
	ErrUnknownScheme = errors.New("storage: unknown scheme")
	// ErrIntegrity: the bytes written differ from PutOptions.Size, MD5 or
	// SHA256 (the storage checked them, or the server did); Commit failed
	// and nothing changed under the key. Wrong bytes from where they were
	// read, not a fault of the storage: a caller fetches them again.
	ErrIntegrity = errors.New("storage: bytes differ from the size or digest given")
)

// Info describes one object.
type Info struct {
	Key     string
	Size    int64
	ModTime time.Time // the object's modification time (local mtime, S3 LastModified or the mtime kept in metadata)
	// Version is opaque and changes whenever the object's bytes may have
	// changed: an ETag for S3, "size:mtime_ns:inode" for a local file.
	// Two equal non-empty versions of one key mean the same bytes.
	Version string
	// ContentType, where the storage keeps one ("" otherwise).
	ContentType string
	// Meta holds user metadata kept with the object (S3 x-amz-meta-*,
	// lower-case names), where the storage has it.
	Meta map[string]string
}

// Content is a read-only collection: what a Source publishes.
type Content interface {
	// List calls fn for every object whose key is > after (all when after
	// is ""), in byte order of the keys, until fn returns an error (which
	// List returns). It lists in pages: memory does not grow with the
	// collection.
	List(ctx context.Context, after string, fn func(Info) error) error
	// Stat returns the object's Info, or an error wrapping ErrNotExist.
	Stat(ctx context.Context, key string) (Info, error)
	// Open reads length bytes of the object from offset (length < 0: to
	// the end). The Info is the object's as it was opened; a reader that
	// finds the object changed under it fails instead of mixing versions.
	Open(ctx context.Context, key string, offset, length int64) (io.ReadCloser, Info, error)
	// Location is the location string the Content was opened from, with
	// any secret redacted; for messages.
	Location() string
	Close() error
}

// Watcher is implemented by a Content that can report changes as they
// happen (local inotify/fsevents). Watch calls fn with the keys (or key
// prefixes, ending in "/"; "" when everything may have changed, after
// events were lost) that may have changed, until ctx ends.
type Watcher interface {
	Watch(ctx context.Context, fn func(keys []string)) error
}

// MtimeVersioned is implemented by a Content whose Versions are made of
// a file's size and modification time (a local directory): a file written
// again within one tick of its mtime keeps its Version, so a Version read
// while the mtime is that recent cannot be trusted (racily clean). A
// Content whose Versions come from the bytes (an S3 ETag, storage/mem's
// MD5) does not implement it: its Versions are trusted whatever the
// modification time, which any writer may set (S3 metadata "mtime").
type MtimeVersioned interface {
	Content
	MtimeVersions()
}

// PutOptions describe an object being written.
type PutOptions struct {
	// Size, when >= 0, is the number of bytes that will be written; an
	// implementation may use it to choose a single PUT or a multipart
	// upload. -1 when unknown.
	Size int64
	// ModTime, when not zero, is kept as the object's modification time
	// (local: the file's mtime; S3: metadata "mtime", as rclone does).
	ModTime time.Time
	// ContentType, when not "", is the media type stored with the object.
	ContentType string
	// MD5 and SHA256, when not nil, are the digests of the bytes that will
	// be written; an implementation that can have the storage check them
	// (Content-MD5, x-amz-checksum-sha256) sends them, and Commit fails
	// if the bytes written differ.
	MD5, SHA256 []byte
	// NoReplace: commit only if nothing is under the key; otherwise the
	// commit fails with ErrExists and nothing changes.
	NoReplace bool
	// IfVersion, when not "", commits only if the object under the key
	// still has this Version (an overwrite of what the tool itself wrote);
	// otherwise ErrExists.
	IfVersion string
	// NoSync lets a local target skip the per-file fsync; the caller makes
	// the batch durable with a Syncer before recording it.
	NoSync bool
}

// Writer stages one object. Nothing is visible under the key until Commit
// returns nil; Abort (or a Commit that fails) leaves the key as it was.
// Exactly one of Commit or Abort is called.
type Writer interface {
	io.Writer
	Commit(ctx context.Context) (Info, error)
	Abort() error
}

// Target is a mirror: where a Destination writes.
type Target interface {
	// Create stages a new object under key.
	Create(ctx context.Context, key string, opt PutOptions) (Writer, error)
	// Stat returns the object's Info, or an error wrapping ErrNotExist.
	Stat(ctx context.Context, key string) (Info, error)
	// Open reads the whole object (for an audit).
	Open(ctx context.Context, key string) (io.ReadCloser, Info, error)
	// Remove removes the object; a missing one is not an error. With
	// ifVersion not "", it removes only that version (ErrExists otherwise)
	// where the storage can tell.
	Remove(ctx context.Context, key, ifVersion string) error
	// List calls fn for every object whose key is > after, in byte order,
	// as Content.List; staged objects not yet committed are not listed.
	List(ctx context.Context, after string, fn func(Info) error) error
	// Location, as Content.Location.
	Location() string
	Close() error
}

// Syncer is implemented by a Target whose commits are not durable until
// synced (a local directory written with PutOptions.NoSync).
type Syncer interface {
	Sync(ctx context.Context) error
}

// ValidKey reports whether key is a well-formed key.
func ValidKey(key string) bool {
	if key == "" || strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") {
		return false
	}
	for _, c := range strings.Split(key, "/") {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return !strings.ContainsRune(key, 0)
}
