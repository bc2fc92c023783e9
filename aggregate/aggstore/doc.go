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
//
// # Fencing
//
// A node that pauses longer than its lease (a GC pause, a stopped VM, a
// process stopped with SIGSTOP) may wake up to find the Source taken
// over. Each lease tenure has an epoch (Lease.Epoch), kept while its
// holder renews the live lease and greater than every earlier one
// whenever the lease is taken anew, expired leases of its own holder
// included; a run keeps the epoch it started under (Run.Epoch). A new
// tenure interrupts the runs of the earlier ones; FinishRun writes a
// run's outcome and schedule only under its own epoch; Fence tells a run
// whether its tenure still lives, so that it checks before it writes
// outside the store (the aggregator asks before every commit of the
// mirror's state and every deletion: see destination.Options.Fence).
//
// # Node names
//
// A node is one Store handle, i.e. one process: a second handle that
// heartbeats under a name whose heartbeat from another handle lives is
// refused (ErrNodeInUse), and a lease is renewed only by the handle that
// took it. A restarted process takes its name over once its
// predecessor's heartbeat has expired, which ends the predecessor's
// tenures.
package aggstore
