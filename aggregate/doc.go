// Package aggregate keeps many Sources mirrored from one long-running
// process (resourcesync aggregate): a library index fed by a catalogue,
// an institutional repository, journals and other libraries, each kept in
// step and reported. It is built on the Destination (package destination:
// Sync for polled Sources, Open and destination/follow for Sources
// followed by notifications), the SDShare client (package sdshare/client,
// merged into one graph store, a named graph per Source and collection)
// and a store of its own (package aggregate/aggstore: schedule, run
// history, leases): there is no second sync engine.
//
// # Scheduling
//
// Each Source is run on its interval with jitter, or followed. A run
// needs one of Options.Workers slots, shared fairly: the slot that frees
// goes to the waiting Source that has been due longest, among those whose
// host is under Options.PerHost running Sources, so several Sources on
// one host never add up to a flood and one slow Source holds at most one
// slot. A run has a deadline (Options.RunTimeout); a failed run delays the
// Source's next one (exponential backoff up to its interval, or
// Options.MaxBackoff), never the others'.
//
// # State
//
// Each mirror's own state stays where sync keeps it
// (DEST/.resourcesync). The aggregator's schedule and run history are in
// an aggstore.Store; with a shared store (PostgreSQL) several aggregator
// processes split the Sources with leases, and a killed node's Sources
// move to the others once its leases expire. A node that was only paused
// past its lease is fenced: its run asks the store before every write of
// the mirror's state and every deletion (destination.Options.Fence) and
// stops at the first refusal, so it records nothing after another node
// took the Source over (aggstore's Fencing). Each process needs its own
// Options.Node: a second live one under the same name is refused
// (aggstore.ErrNodeInUse; Run waits a lease time first, for a killed
// predecessor's heartbeat to expire).
package aggregate
