// Package aggstore defines the aggregator's own state (package aggregate)
// as an interface, Store: each Source's schedule (next run, consecutive
// failures, last success), the run history (start, end, mode, counts,
// lag, error), and the leases by which several aggregator processes
// ("nodes") sharing one store split the Sources between them. The
// mirrors' own state stays where sync keeps it, in each DEST/.resourcesync.
//
// Implementations: package boltstore (the default, one file, one process)
// and package pgstore (PostgreSQL, several nodes). Both pass the contract
// suite in package aggstoretest; aggstoreurl opens either from a URL.
//
// # Leases
//
// The model is the hub cluster's claims (websub/hub/hubstore): a node
// heartbeats, claims Sources for a ttl and renews them; a Source is held
// by at most one node with a live lease; a killed node's leases expire and
// other nodes take them, marking its unfinished runs interrupted. A run
// is recorded only while its node holds the lease (StartRun), and ends
// once (FinishRun): a run interrupted by kill -9 is never reported as
// successful.
package aggstore
