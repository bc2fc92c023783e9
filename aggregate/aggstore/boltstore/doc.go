// Package boltstore is the aggregator's default aggstore.Store: one bbolt
// file (DIR/.aggregate/aggregate.db by default), opened by one process at
// a time, fsynced on every commit.
//
// Leases work as the contract says within the process: each node name is
// its own holder, and the lease clock is the store's (Options.Now). Every
// method is one bbolt transaction, so a claim, its takeover of an expired
// lease and the interruption of the runs under it are one atomic step.
//
// # Layout
//
// Buckets: runs (run ID, 8 bytes big-endian, to the run as JSON),
// bysource (a bucket per Source of its run IDs, so Runs reads one
// Source's history newest first without a scan), running (the IDs of the
// running runs, so a takeover or InterruptRuns reads those only),
// schedules and leases (Source to JSON), nodes (node to its heartbeat's
// expiry, Unix nanoseconds). A value that does not decode is reported as
// ErrCorrupt, never a panic.
package boltstore
