// Package aggstoretest is the contract suite of aggstore.Store: every
// implementation runs Run (one handle), RunShared (two handles on one
// store, as two nodes see it) and RunDurable (close and reopen) in its
// tests.
//
// Leases are tested with short ttls (about a second) and polling until
// the store's clock has passed them, never with a sleep taken as an
// assertion; a test takes a few seconds at most.
package aggstoretest
