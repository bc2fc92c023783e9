// Package memstore is an in-memory store.Store for tests: the Source state
// without a file or a database, and several handles on one state that
// implement store.Shared within the process, so that the replica logic
// (one scanner, the others following) can be tested fast and without
// PostgreSQL.
//
// New returns a DB; DB.Open(set) returns a handle on the state of one set.
// Handles opened on the same DB with the same set name share that state:
//
//   - every handle sees every other handle's commits at once;
//   - Lead is exclusive among the handles of one set: it blocks until no
//     other handle holds the role; the role is held until release is
//     called or the handle is closed (Close also closes lost, standing
//     for a holder whose connection broke; Lose does so and keeps the
//     handle open);
//   - Watch signals commits (Apply, PutMeta) by any handle, coalesced in a
//     channel of capacity one.
//
// The state lives as long as the DB: closing every handle and opening a
// new one finds it again (as reopening a database would). Nothing is
// durable across processes: it is not a store for production.
//
// The implementation favours obviousness over speed: one lock per set, the
// inventory as a map plus a sorted slice of paths (inserts and deletes
// move the slice: fine up to a few hundred thousand resources), the
// journal as a slice.
package memstore
