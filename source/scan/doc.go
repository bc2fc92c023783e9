// Package scan keeps a Source's inventory and change journal (package
// source/store) in step with a directory.
//
// A Scanner walks the directory, skipping hidden files and directories
// (names starting with "."), the excluded paths (the state directory) and
// the user's skip patterns, and never following symbolic links. It walks in
// the byte order of the slash-separated paths relative to the root (each
// directory's entries sorted by name, a directory compared as name+"/", so
// "a.txt" < "a/b" < "a0"), which is the inventory's order, and merges the
// walk with the inventory read in pages (Store.ResourcesIn): each file is
// paired with its record or none, and a record the walk passes without
// finding its file is deleted. Memory therefore holds the directories
// being walked and a page of records, not the inventory: it does not grow
// with the collection (it grows with the largest directory's listing).
//
// The walk only lists directories; a pool of runtime.NumCPU() workers
// takes the files in chunks and compares each known file's size, mtime
// and inode (one lstat, relative to its directory's open descriptor on
// Linux) with its record, so a rescan of unchanged files costs one stat
// per file on every core and a sequential read of the inventory. New files
// and files whose stat fields differ are opened (not following symbolic
// links), fstat'ed, read once through a fixed buffer computing md5 and
// sha-256 in the same pass (files of any size are never held in memory),
// and fstat'ed again; the media type comes from the extension, else from
// the first 512 bytes. A committer goroutine applies full batches while
// the workers go on.
//
// ScanPaths does the same for some paths only (the paths filesystem events
// name): the walk starts at each path and the merge reads only the records
// of that path and of the paths under it, so its cost follows the size of
// those subtrees, not of the collection.
//
// # A Content instead of a directory
//
// With Options.Content (a bucket, an in-memory twin), the Scanner lists
// the Content instead of walking Root. The listing is in key order, the
// inventory's order, and is merged with the inventory pages as the walk
// is, so memory stays as flat. There is no stat: a known object whose
// listed size and Version (an ETag) equal its record's (Size, and Inode
// holding VersionHash of the Version) is never opened; a new or changed
// one is opened once and hashed, and a record the listing passes is
// deleted. The hidden-name and Skip rules apply to each component of a
// key as to a path. A listing that fails ends the scan with nothing
// deleted; a listing with no publishable key is refused as an empty root
// (RefuseEmptyRoot). ScanPaths scans such a Content whole: no event
// names its paths.
//
// # Changes
//
//   - a file not in the inventory is created;
//   - a file whose bytes differ from the inventory's (size or hashes) is
//     updated;
//   - a file whose stat fields changed but whose bytes did not (touched)
//     gets its inventory stat fields refreshed, with no journal record;
//   - an inventory path not found by the walk is deleted;
//   - a rename is a delete of the old path plus a create of the new one.
//
// The first scan of a collection establishes the baseline: its files go
// into the inventory without journal records (store.Batch.Baseline), and
// the batch that completes it records its datetime under
// store.MetaBaseline. The journal, and so the Change Lists, hold only the
// changes after the baseline; a Destination gets the baseline from the
// Resource List. A first scan that is interrupted leaves a partial
// baseline that the next scan completes the same way. Stats.Baseline tells
// such a scan apart.
//
// The datetime of a change is when the scan detected it (not the file's
// mtime, which is published as lastmod): the journal's datetimes must never
// decrease, and each batch takes max(now, the journal's last datetime,
// the baseline's datetime).
//
// # Faults
//
// Nothing a file does crashes a scan or puts wrong data in the state; each
// case is one log line:
//
//   - a file or directory that cannot be read (permissions, I/O error) is
//     left as the inventory has it: no change is recorded, and in particular
//     it is not deleted, since it still exists; everything under a
//     directory that cannot be listed is protected the same way (the merge
//     passes over its range of records);
//   - a file that vanishes between the walk and its reading is deleted (if
//     the inventory had it), since it no longer exists;
//   - a file whose size, mtime or inode after reading differ from before
//     (it changed while being read, or between its lstat and its opening)
//     is read once more; if it changes again it is skipped for this scan
//     and keeps its old inventory record, so a hash is never recorded for
//     bytes other than the ones hashed;
//   - a file replaced by a symbolic link, a directory or a FIFO between the
//     listing and the reading is treated as deleted;
//   - a file whose mtime is too recent to be trusted (within RacyWindow of
//     the moment it was read: a write in the same timestamp tick would not
//     change it) is recorded with a zero inventory mtime, so the next scan
//     reads it again instead of trusting its stat fields (git's "racily
//     clean" rule);
//   - the state's errors (disk full, corruption) end the scan with the
//     store's error; what was committed before stays consistent.
//
// # Batches and crash safety
//
// Changes are applied in batches of Options.BatchSize (default 10,000)
// changes and touches (at most 128 after the baseline, whose changes are
// scattered over the inventory: a transaction holds every page it changes), each one atomic store transaction that appends the
// journal records and updates the inventory together, so that at every
// committed state the inventory equals the replay of the journal. Batches
// are applied while the walk and the hashing go on (each batch's changes
// sorted by path, all with one datetime); deletes come out of the merge
// as the walk passes the records, so they are committed along with the
// rest.
//
// A crash (kill -9, power loss) between or during batches therefore leaves
// the state of the last committed batch: some of the scan's changes are in
// both the journal and the inventory, the others in neither. The next scan
// diffs the directory against that inventory again, so it finds exactly the
// changes not yet committed: a change already journaled now matches the
// inventory and is not recorded twice, a change not committed still
// differs and is not lost. The store rejects a created record for a path it
// has, or an updated or deleted record for a path it lacks (ErrConflict), so
// even a buggy or concurrent writer cannot make the journal contradict the
// inventory. Bounded batches keep each transaction, its memory and its
// commit latency small for scans with hundreds of thousands of changes.
//
// One Scanner must be the only writer of its store; Scan calls on one
// Scanner are serialised.
package scan
