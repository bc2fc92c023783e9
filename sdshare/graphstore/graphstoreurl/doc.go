// Package graphstoreurl opens an SDShare client's graph store from a
// store URL, the spelling of sdshare sync's and receive's --store:
//
//	DIR, bolt:DIR   the embedded quad store (package boltstore), the file
//	                DIR/graph.db, one process at a time
//
// There is no PostgreSQL graph store: a postgres:// URL is ErrScheme. A
// SPARQL 1.1 endpoint is a graph store too (package sparql), named by its
// endpoint URLs rather than by a store URL.
package graphstoreurl
