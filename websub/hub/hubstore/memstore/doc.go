// Package memstore is an in-memory hubstore.Store: for tests, and for a
// hub whose state may be lost on exit. A DB is one state; every Open on it
// is a handle, like a process connected to a shared database, so that
// several hub nodes in one process can run as a cluster on one DB (claims,
// fencing and Watch behave as the contract says across handles). Closing
// a handle does not release its claims: they expire after their ttl, as
// those of a killed process.
package memstore
