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
// Repositories that keep no deleted records (deletedRecord=no) are
// reconciled by a full ListIdentifiers pass every Config.FullEvery: the
// files of identifiers the pass did not list are removed, and only when
// the pass completed.
package harvest
