// Package pgstore implements store.Store and store.Shared on PostgreSQL:
// the Source state of several processes (Source replicas) on one database
// an operator already runs. The embedded store (package bolt) stays the
// default; this is the same contract (package store) with a second
// implementation, passing the same suite (storetest.Run, RunShared).
//
// The full operator documentation (schema, migrations, roles and
// failover) is written out below as it stabilises.
package pgstore
