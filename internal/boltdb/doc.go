// Package boltdb is the bbolt plumbing every embedded state shares (the
// Source store, the hub store, the graph store, a Destination's state,
// the SDShare client state and push order file): opening a file with a
// lock timeout, and turning bbolt's panics on damaged pages into errors.
// It classifies what went wrong (ErrLocked, ErrCorrupt) and keeps the
// cause's text, so each caller words its own message around its own
// sentinel errors. A state opened for writing can record its process
// beside the file (MarkHolder), so that another command refused with
// ErrLocked is told which one holds it (Holder), not just "another user".
package boltdb
