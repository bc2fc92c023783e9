// Package hubstoreurl opens a WebSub hub's state (a hubstore.Store) from
// a store URL, the spelling of hub --store:
//
//	bolt:DIR                   the embedded store (package boltstore), the
//	                           file DIR/hub.db, one process at a time
//	postgres://USER@HOST/DB    one PostgreSQL database (package pgstore),
//	postgresql://...           shared by the nodes of a hub cluster
//
// Messages about a URL show it through Redact (passwords hidden).
package hubstoreurl
