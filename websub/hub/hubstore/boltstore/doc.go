// Package boltstore is the embedded hubstore.Store: one bbolt file
// (hub.db), opened by one process at a time (ErrLocked otherwise). It is
// the hub's default and keeps the layout the hub has always written, so
// existing state files open with their subscriptions, logs, pending
// verifications and dead letters:
//
//	log/<topic>/<seq 8 bytes BE> -> entry   (the bucket's Sequence is the head)
//	subs/<key>                    -> subscription (JSON)
//	verif/<id 8 bytes BE>         -> job (JSON)
//	dead/<id 8 bytes BE>          -> dead letter (JSON)
//
// Every write is one bbolt transaction, fsync'd unless NoSync. The
// subscriptions and the pending verification jobs are also kept in memory
// (as the hub always kept them), so that claims, cursor flushes and the
// verifier decode nothing; the file stays the truth on open. Claims live
// in memory with the contract's semantics (one process; node names
// distinguish only the callers): they do not survive a restart, which a
// single process does not need.
package boltstore
