// Package harvest keeps an OAI-PMH 2.0 repository as a directory of record
// files, which a ResourceSync Source (package source) publishes like any
// directory: the same journal, stores, Change Lists, dumps and
// notifications, with no code path of its own.
//
// Each record of each metadata prefix is one file, at RecordPath: its bytes
// are the record's <metadata> child serialised canonically (the same bytes
// on every harvest while the record does not change, so an unchanged
// re-harvest writes nothing and the Source journals nothing), its
// modification time is the record's datestamp (the Source publishes it as
// lastmod). A deleted record's file is removed.
//
// The first Harvest lists every record (ListRecords for each prefix and
// set); later ones ask only for records changed since the previous
// harvest's start, overlapping by one granule of the repository's
// granularity so that a record stamped at the boundary is not missed.
// Every Config.FullEvery a harvest also makes a full pass: after the
// incremental lists it lists every record again (ListRecords without
// from), for every repository, whatever its deletedRecord. Each record's
// canonical bytes are compared with its file's, so only real changes are
// written and journaled, and what the pass changes is what the
// incremental lists missed: a repository whose from is wrong (one answers
// from=D as if it were a month later) is caught, and the count is logged
// and kept in Status.FullMissed ("the repository's from missed N
// changes"). When the pass completes, the files of records it did not
// list are removed: the deletions of a repository with deletedRecord=no,
// and records that left the harvested sets (a pass listing nothing at
// all removes nothing: a repository rebuilding its index says
// noRecordsMatch). A record listed for a harvested set whose header names
// only other sets has left it too, and its file is removed at once.
//
// What a repository sends is bounded: a record's bytes (64 MiB), its
// canonical form (16 times its bytes, at least 1 MiB, at most 64 MiB: a
// namespace declared once and used by many elements is declared again on
// each, so a 1 MiB record could otherwise become 1 GiB; such a record is
// skipped with a warning), the record files in Dir (Config.MaxRecords)
// and the space they leave free on its file system (Config.MinFree): a
// repository listing endless records stops the harvest with
// ErrTooManyRecords or ErrLowDiskSpace before the page that would cross
// either is written.
//
// A harvest goes in batches of pages (up to 10,000 records, 64 MiB staged
// or 5 seconds, whichever comes first). A page's changed records are
// written to hidden temporary files beside their places (the Source
// ignores hidden files); when the batch is complete its files are made
// durable together (one syncfs on Linux, an fsync per file elsewhere),
// renamed into place, and the harvest state (a bbolt file in
// Config.State: per list the from, the next resumptionToken and the
// pages done) moves past the batch's last page in one transaction, then
// Config.Committed receives the batch's paths; the next batch is read
// and staged meanwhile. Two syncfs and a state commit per batch, not per
// page: they were most of a harvest's time. A record changed by two
// pages of a batch ends as the later says. A harvest stopped by an
// error, a cancellation or kill -9 resumes at the first page of the
// first batch not committed, and reports the last batch's paths again if
// Committed may not have seen them. A resumptionToken the repository refuses (expired)
// restarts its list from the saved from: the pages already committed come
// back unchanged and write nothing.
//
// Requests go through the project's one retry policy (internal/retry):
// 503, 429 and other 5xx answers and network errors are retried,
// honouring Retry-After. Responses are parsed as they arrive
// (encoding/xml), one record at a time. Malformed records (not
// well-formed, invalid UTF-8, undeclared prefixes, a header without
// identifier) are skipped with a warning naming the identifier and
// counted in Stats.Malformed.
package harvest
