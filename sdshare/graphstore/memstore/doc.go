// Package memstore is the in-memory graphstore.Store: for tests, for
// servers whose collections fit in memory, and as the reference the
// durable boltstore is compared with.
//
// Each graph is a set of triples indexed by subject. Blank nodes are
// stored under labels the store makes ("m" + a counter shared by all
// graphs), so labels given by two calls never meet. A write builds its
// result before it takes the lock and swaps it in, so a failed or
// cancelled call changes nothing; readers copy what they return, so an
// iteration is a snapshot and may run while others write.
package memstore
