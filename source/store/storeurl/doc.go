// Package storeurl opens a Source's state (a store.Store) from a store
// URL, the one spelling every command's --store takes:
//
//	bolt:DIR                   the embedded store (package bolt), one file
//	                           DIR/SET/state.db per set, one process at a time
//	postgres://USER@HOST/DB    one PostgreSQL database (package pgstore), sets
//	postgresql://...           by name, shared by replicas
//
// Messages about a URL show it through Redact (passwords hidden).
package storeurl
