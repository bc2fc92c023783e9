// Package hubstoreurl opens a WebSub hub's state (a hubstore.Store) from
// a store location, the spelling of hub --store:
//
//	DIR, file:///DIR, bolt:DIR  the embedded store (package boltstore), the
//	                            file DIR/hub.db, one process at a time
//	postgres://USER@HOST/DB     one PostgreSQL database (package pgstore),
//	postgresql://...            shared by the nodes of a hub cluster
//	mem:NAME                    an in-memory state (package memstore), one per
//	                            NAME in the process: for tests and examples
//
// The grammar is internal/location's; each scheme registers its Opener
// once (Register), and Open looks it up: an unknown scheme is ErrScheme,
// naming the known ones. Messages about a URL show it through Redact
// (passwords hidden).
package hubstoreurl
