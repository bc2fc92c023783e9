// Package pgstore keeps a WebSub hub's state (hubstore.Store) in
// PostgreSQL, so that several hub processes ("nodes") behind one URL share
// the topic logs, the subscriptions and the work of delivering them.
//
// Open(ctx, "postgres://...", nil) connects, applies the schema
// migrations and starts listening; the returned Store passes
// hubstoretest.Run, RunDurable and RunCluster.
//
// # Schema and migrations
//
// The schema is versioned in hub_schema. Open applies the missing steps,
// each in a transaction that first takes pg_advisory_xact_lock(a constant
// key), so nodes starting at once apply every step exactly once; a
// database whose version is newer than this program knows is refused
// (ErrSchemaTooNew) and not touched. Strings the hub gets from the
// network (keys, topics, callbacks, secrets, header values) are bytea:
// text refuses NUL bytes (subscription keys hold one) and invalid UTF-8,
// and bytea orders bytewise, as Go compares strings.
//
// # How each guarantee is kept
//
//   - Gapless per-topic numbers: Append is one statement that upserts the
//     topic's head row (hub_topics; the row lock serializes the appends of
//     a topic) and inserts the entry with the new head, so both commit or
//     neither does.
//   - Reads after a cursor: keyset pages on the primary key (topic_id,
//     seq); Prune deletes a bounded range from the smallest seq.
//   - Claims: hub_subs carries holder and lease_until (an unheld row has
//     NULL and -infinity, so "free or expired" is one range scan of the
//     lease index). Claim renews the node's live leases, takes free or
//     expired rows with FOR UPDATE SKIP LOCKED (two nodes claiming at once
//     skip each other's rows instead of waiting) and reads what the node
//     holds, in one transaction on the server's clock: a node killed with
//     SIGKILL loses its subscriptions when its leases run out, and the
//     next Claim of another node takes them.
//   - Fencing: UpdateCursors and AddDeadLetter write only rows whose
//     holder is the node and whose lease is live on the server's clock;
//     the cursor is greatest(stored, new).
//   - Verification jobs are claimed the same way (the lowest ID of each
//     key, due by the next_at index).
//   - Counts come from hub_counts, kept by statement triggers, not from
//     counting tables; the bounds of AddJob and Subscribe count at most
//     the bound (a range scan LIMIT bound).
//   - Watch: the writing transactions call pg_notify with the event as
//     payload (sent only if they commit). One connection per Store, apart
//     from the pool, LISTENs; when it breaks it reconnects with backoff,
//     listens again and reports every event once, since notifications sent
//     meanwhile are lost.
//
// A connection pooler in front of the server must run in session mode
// (LISTEN belongs to a session). Claims use the server's clock, so nodes
// need no synchronized clocks for fencing; the hub stops delivering before
// its lease ends by its own clock, which assumes the node's clock and the
// server's do not drift apart by a large part of the claim TTL.
//
// Every request reads or writes through an index: a primary key or
// unique lookup, or a range scan (TestQueriesUseIndexes checks the plans).
package pgstore
