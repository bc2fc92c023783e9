// Package graphstoreurl opens an SDShare client's graph store from a
// store location, the spelling of sdshare sync's and receive's --store:
//
//	DIR, file:///DIR, bolt:DIR  the embedded quad store (package boltstore),
//	                            the file DIR/graph.db, one process at a time
//
// There is no PostgreSQL graph store: a postgres:// URL is ErrScheme,
// naming the known schemes. The in-memory store (package memstore) drops
// its content on Close, so it has no location. A SPARQL 1.1 endpoint is a
// graph store too (package sparql), named by its endpoint URLs rather
// than by a store location. The grammar is internal/location's; each
// scheme registers its Opener once (Register).
package graphstoreurl
