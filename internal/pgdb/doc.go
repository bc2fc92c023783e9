// Package pgdb is the PostgreSQL plumbing every shared state store uses
// (the Source store, the hub store, the aggregator's store), as
// internal/boltdb is the embedded stores': one way to build a connection
// pool from a URL, one schema migration runner under an advisory lock,
// and one way to keep a connection string's password out of messages.
//
// A store keeps what is its own (its schema steps, its sentinel errors,
// its session settings, whether its Stores share pools); what used to be
// copied between the three pgstore packages lives here, so a fix to the
// keepalive, the pool defaults or the redaction reaches all of them.
package pgdb
