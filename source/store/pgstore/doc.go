// Package pgstore implements store.Store and store.Shared on PostgreSQL:
// the Source state of several processes (Source replicas) on one database
// an operator already runs. The embedded store (package bolt) stays the
// default; this is the same contract (package store) with a second
// implementation, passing the same suites (storetest.Run, RunShared).
//
//	s, err := pgstore.Open(ctx, "postgres://rs@db.example/rs", "collection-a", nil)
//
// # Sets
//
// One database holds many sets: a Source has several named sets, and
// several Sources may share a database. Every row carries the integer id
// of its set (table rs_sets, one row per set name, created by the first
// Open of that name).
//
// # Schema
//
//	rs_schema_migrations (version PK, applied_at)
//	rs_sets      (id PK, name UNIQUE, first_seq, last_seq, last_time,
//	              resources, lead_epoch)                 -- the head row of a set
//	rs_inventory (set_id, path bytea, size, mtime, inode, md5, sha256,
//	              type bytea, lastmod, changed)   PK (set_id, path)
//	rs_journal   (set_id, seq, time, kind "char" 'c'|'u'|'d', path, ...the
//	              resource's columns)              PK (set_id, seq),
//	              INDEX rs_journal_time (set_id, time, seq)
//	rs_meta      (set_id, key text, value bytea)   PK (set_id, key)
//
// Paths (and media types) are bytea: they are raw bytes, possibly invalid
// UTF-8, and PostgreSQL orders bytea bytewise, which is the contract's
// ascending byte order whatever the database's collation. Times are bigint
// nanoseconds since the Unix epoch (so 1678..2262), UTC; a zero time is
// NULL (a zero change datetime, which the scanner never writes, is the
// minimum bigint). There are no foreign keys: their triggers halved the
// rate of COPY, and rows of a set are only ever written by this package.
//
// # Migrations
//
// Open applies the migrations this program knows, in order, each in its
// own transaction that first takes pg_advisory_xact_lock(0x72735f6d69677231)
// and re-reads the version: processes starting at once wait for one
// another and each migration runs exactly once (8 concurrent Opens on a
// fresh database are tested). A database whose version is newer than the
// program knows is refused (store.ErrCorrupt, "upgrade the program"):
// older programs never write a schema they do not understand.
//
// # Writes
//
// Apply locks the set's head row (SELECT ... FOR UPDATE) first: writers of
// a set are serialised, sequence numbers are assigned inside the
// transaction and are consecutive (a writer killed mid-transaction leaves
// nothing: no gap, no duplicate), and Stats reads one row. The batch's
// paths are looked up with one index query (skipped when the batch only
// creates: the primary key refuses an existing path), the batch is checked
// in memory (store.ErrConflict, store.ErrTimeOrder: nothing written), then
// written: inserts of 256 rows or more (the scanner's baseline batches of
// 10,000, large journal appends) with COPY, the rest with one statement per
// kind over arrays (unnest), meta values, the head row, and
// a pg_notify (empty payload) for Watch, all in one pipelined transaction.
// SQLSTATE 53100 (disk full) is store.ErrNoSpace. A path longer than about
// 2,700 bytes exceeds the B-tree's row limit and is refused with an error
// saying so; the scanner never sends one: Store is a store.PathLimiter
// (MaxPath, 2,600 bytes), and longer paths are skipped with a warning.
//
// # Reads
//
// Get is one primary-key lookup. ResourcesIn and Journal read keyset pages
// of 1,000 rows (path > last, seq > last, (time, seq) > last for
// JournalBetween), one statement each: no transaction is held between
// pages. Resources reads one snapshot: a REPEATABLE READ, READ ONLY
// transaction with a cursor fetched 1,000 rows at a time, so memory does
// not grow with the inventory; it holds a connection until the loop ends.
//
// Every query is an index lookup or an index range scan, and must stay one
// when the planner's statistics are stale: a million rows loaded in
// seconds are estimated at a few hundred, and the planner would sort the
// whole range for each page. The store's sessions therefore disable the
// other plan types (enable_seqscan, _bitmapscan, _sort, _hashjoin,
// _mergejoin off: settings of these sessions only), and Apply runs ANALYZE
// on the two tables in the background after 20,000 inserted rows and
// whenever the inventory grew by half since (ignored if the role may not;
// autovacuum does it later).
//
// # Lead: the scanner role
//
// Lead takes pg_try_advisory_lock(0x72737363, set id) on a connection of
// its own (taken from the pool and not returned), retried every 300 ms
// until it succeeds or ctx ends. A session lock lives as long as its
// connection: Close or release unlocks it; a holder killed with SIGKILL
// loses it as soon as the server sees the socket close — at once when the
// holder's host is alive (its kernel closes the socket): measured ~0.3 s
// from SIGKILL to the new leader on loopback, mostly the retry interval.
// When the holder's host vanishes (power loss, partition), the server
// notices through TCP keepalives: the store's sessions set
// tcp_keepalives_idle and _interval to Options.KeepAlive (default 5 s) and
// _count to 3, so the role is free after about 20 s; the client sockets use
// the same keepalive. The holder checks its connection every second and
// closes lost when the check fails. Each Lead also increments the set's
// lead_epoch, and Apply on a Store that led refuses to write
// (store.ErrLocked) once the epoch moved on: a former holder that has not
// yet noticed its loss cannot write after its successor started.
//
// What a failover costs: the role's wait (above) plus the new leader's
// first scan, which is an ordinary rescan against the inventory in the
// database — nothing is rebuilt, and the journal continues at the next
// sequence number.
//
// # Watch
//
// Apply and PutMeta notify channel rs_source_<set id> (empty payload) in their
// transaction; PostgreSQL delivers it at commit (and coalesces the
// notifications of one transaction). Watch LISTENs on that channel on a
// connection of its own and coalesces notifications into a channel of
// capacity 1; one connection per Store serves all its Watch channels.
// When that connection breaks, Watch connects and LISTENs
// again (every 500 ms until it succeeds) and then sends one value, since
// commits may have been missed meanwhile. Watching costs no polling.
//
// # Connections
//
// The Stores of a process opened on one URL (with the same Options) share
// one pool of Options.MaxConns connections (default 8, or the URL's
// pool_max_conns), opened on demand and closed after 5 minutes idle; each
// Lead (holding or waiting) uses one more, and each Store's Watch channels
// one more. A replica serving one set thus holds at most 10 connections,
// and 8 + 2 per set with several. Sessions are
// named application_name=resourcesync unless the URL says otherwise. Other
// connection settings come from the URL (sslmode, connect_timeout,
// search_path via options=-csearch_path=..., and so on). A connection
// pooler must run in session mode: advisory locks and LISTEN are session
// state (PgBouncer's transaction mode breaks Lead and Watch).
//
// # Operating it
//
//   - Privileges: the first Open (and each upgrade that adds a migration)
//     needs CREATE on the schema the tables go into (the first schema of
//     the search_path); afterwards SELECT, INSERT, UPDATE and DELETE on the
//     rs_ tables suffice (tested). Owning the tables lets the store
//     ANALYZE them.
//   - Vacuum: rs_journal is append-only (autovacuum's insert threshold keeps
//     its visibility map current); rs_inventory gets an update or a delete
//     per changed file; the head row of rs_sets is updated by every Apply
//     (HOT updates, a tiny table). Default autovacuum suffices; after a
//     large first load, a manual VACUUM ANALYZE makes the first rescan's
//     index-only work cheaper.
//   - Size: about 200 bytes per inventory row and per journal row, plus
//     the indexes (the path's length counts twice: table and primary key).
//   - Backups: pg_dump, or any physical backup, gives a consistent state: the
//     inventory always equals the replay of the journal at every commit.
//   - The journal is never trimmed by this package; Stats.FirstSeq is kept
//     in the head row for a future trimming.
//   - The NOTIFY queue is global to the cluster; listeners here never hold
//     transactions, so they never hold it back.
package pgstore
