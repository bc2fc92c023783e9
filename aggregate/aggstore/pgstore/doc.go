// Package pgstore is an aggstore.Store in PostgreSQL, for several
// aggregator processes ("nodes") sharing one database; it may share it
// with the hub's store (websub/hub/hubstore/pgstore): its tables are
// named aggregate_*.
//
// Leases are decided by the server's clock (now()), so nodes whose
// clocks disagree still agree on who holds a Source. Claim is one
// INSERT ... ON CONFLICT DO UPDATE ... WHERE the lease is the node's or
// expired, which PostgreSQL runs atomically against concurrent claims;
// in the same transaction it interrupts the Source's runs of earlier
// epochs. StartRun inserts the run only while it holds the lease row
// FOR SHARE, so that a concurrent takeover either waits for the run (and
// interrupts it) or refuses it. Epochs come from one sequence
// (aggregate_lease_epochs); Fence is one join of the run's and the
// lease's rows by primary key, outside a transaction (0.1 to 0.3 ms on
// loopback, BenchmarkFence); FinishRun's UPDATE is conditional on the
// run's epoch being the lease's. A Store handle draws a random instance at Open that its
// heartbeats and leases carry: the node's row refuses another live
// instance.
//
// Open brings the schema up to date (aggregate_schema keeps the version),
// one step per transaction under an advisory lock, so nodes starting at
// once migrate it once.
package pgstore
