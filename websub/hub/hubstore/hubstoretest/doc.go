// Package hubstoretest is the contract suite of hubstore.Store: every
// implementation runs Run (each method's contract on one handle), RunDurable
// if it keeps its state across a reopen, and RunCluster if it can be opened
// twice on one state (claims, fencing and Watch across handles).
package hubstoretest
