// Package storage defines the two content seams of the toolkit and the
// registry that opens them from a location string.
//
// A Source's collection is read through a Content: a listing in key order
// (paged by the implementation, so memory stays flat in the collection),
// a Stat, an Open with ranges, and change events where the storage has
// them (Watcher). A Content whose Versions are made of modification
// times, not of the bytes, says so (MtimeVersioned): a scan trusts such a
// Version only once the mtime is old enough. A Destination's mirror is written through a Target: an object is
// staged, written and committed atomically (nothing partial is ever
// visible under its key), removed, opened for an audit and listed for
// adoption.
//
// Keys are slash-separated paths relative to the root of the collection
// or mirror ("a/b.txt"): never empty, never starting or ending with "/",
// no "." or ".." component, no empty component. ValidKey checks one.
//
// Implementations:
//
//   - storage/local: a directory on the local file system (every guarantee
//     of the trust suite: nothing outside the root, no symbolic link
//     followed, atomic renames, fsync);
//   - storage/mem: an in-memory twin, for tests and examples;
//   - storage/s3: an S3-compatible bucket and prefix (aws-sdk-go-v2).
//
// storage/storagetest holds the contract suites every implementation
// runs: ContentSuite and TargetSuite.
//
// # Registry
//
// A scheme registers once (Register, from the implementation's init);
// OpenContent and OpenTarget parse a location ("/path", "file:///path",
// "s3://bucket/prefix", "mem://name") and call the scheme's opener. A
// location without a scheme is a local path. The grammar is the one of
// every location string of the code base, the state stores' --store
// locations included (internal/location): a scheme is two characters or
// more, so "C:\dir" is a path; a relative path whose first element holds
// a colon must be written "./ab:c". An unknown scheme is ErrUnknownScheme,
// naming the known ones; no error shows a location's password. The file
// scheme's openers read their root through LocalPath, so "/path",
// "file:///path" and "file:path" mean one directory.
package storage
