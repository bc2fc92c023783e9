// Package storeurl opens a Source's state (a store.Store) from a store
// location, the one spelling every command's --store takes:
//
//	DIR, file:///DIR, bolt:DIR  the embedded store (package bolt), one file
//	                            DIR/SET/state.db per set, one process at a time
//	postgres://USER@HOST/DB     one PostgreSQL database (package pgstore), sets
//	postgresql://...            by name, shared by replicas
//	mem:NAME                    an in-memory state (package memstore), one per
//	                            NAME in the process: for tests and examples
//
// The grammar is internal/location's; each scheme registers its Opener
// once (Register), and Open looks it up: an unknown scheme is ErrScheme,
// naming the known ones. A Source's default state (Config.StateDir) opens
// through Local. Messages about a URL show it through Redact (passwords
// hidden).
package storeurl
