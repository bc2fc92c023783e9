// Package sparql is a graphstore.Store over a SPARQL 1.1 endpoint: Update
// and Query requests (SPARQL 1.1 Protocol) and, optionally, the Graph
// Store HTTP Protocol for loading snapshots. It is written for, and tested
// against, Virtuoso Open Source 7 (Debian's virtuoso-opensource-7-bin);
// it uses only standard SPARQL 1.1, so any conformant endpoint works.
//
// # How each operation maps to requests
//
// ReplaceGraph writes the snapshot as N-Triples into a temporary file
// (memory stays bounded; disk grows with the snapshot), then sends it in
// ONE request into a fresh temporary graph
// urn:x-resourcesync:graphstore:tmp:<random> — a Graph Store PUT when
// Endpoints.GraphStore is set, else one INSERT { GRAPH <tmp> { … } } WHERE
// {} update — so its blank nodes are consistent across the whole snapshot
// and fresh with respect to the store. Then one update request
// "DROP SILENT GRAPH <g> ; ADD SILENT <tmp> TO <g> ; DROP SILENT GRAPH
// <tmp> ; INSERT DATA { registry entry }" replaces g (not MOVE, which on
// Virtuoso 7.2.5 empties g row by row: 28 s for 10,000 triples and minutes
// for 100,000, against 0.3 s for DROP GRAPH). Until that request, g is
// untouched: if ts fails, ctx ends or the upload
// fails, the temporary graph is dropped (best effort, with a fresh
// context) and g is as before.
//
// Without a Graph Store endpoint, snapshots are limited by Virtuoso's
// SPARQL compiler: an INSERT template of ~3,000 triples with blank nodes
// fails with "SP030 … memory exhausted". Set Endpoints.GraphStore for real
// snapshots.
//
// The file is needed because Virtuoso 7 silently ignores a request body
// sent with chunked transfer encoding (it answers 201/200 and stores
// nothing, TestVirtuosoIgnoresChunkedBody): every body is sent with a
// Content-Length.
//
// ApplyFragment sends one update request: a DELETE of r's closure (a
// fixed-depth UNION: r's statements, those of the blank nodes r reaches
// directly, of the blank nodes those reach, … up to depth D), an INSERT {
// GRAPH <g> { ts } } WHERE {} (Virtuoso rejects blank nodes in INSERT DATA;
// a template with blank nodes makes fresh ones per request), and the
// registry entry. D is exact at any depth: before the update a SELECT
// DISTINCT asks which blank nodes are reachable at each depth 1…K+1; the
// closure is complete at the least d where the nodes at depth d+1 were all
// seen at depths ≤ d (then no further node can be reached, cycles
// included). If no d ≤ K qualifies, K doubles (4, 8, 16 = MaxDepth), then
// ErrTooDeep. A writer changing r's nesting between the probe and the
// update can make D stale; the SDShare client applies one graph's fragments
// in order, so nothing does.
//
// Every blank node label a call sends (snapshot body or INSERT template)
// carries a random prefix of that call (_:b<16 hex>_<label>): the
// contract scopes labels to one call, and a Graph Store that keeps the
// labels it receives (Oxigraph's server) would otherwise join the _:b1 of
// every snapshot and of every collection loaded into it.
//
// Fragment probes D the same way and CONSTRUCTs the closure; Triples is
// one CONSTRUCT over g. Both responses are N-Triples read as they arrive,
// never held whole.
//
// Graphs lists the graphs this store wrote, from the registry graph
// urn:x-resourcesync:graphstore:registry (one triple <g> a
// <urn:x-resourcesync:graphstore:Graph> per graph, written in the same
// request as the graph's data), keeping those that hold triples. Listing
// all of the endpoint's graphs instead would return Virtuoso's own
// system graphs (http://www.openlinksw.com/schemas/virtrdf#, …) and other
// applications' data.
//
// # Atomicity on Virtuoso
//
// Virtuoso runs one HTTP update request as one transaction and commits it
// at the end ("Commit -- done" in its answer), so a kill -9 of the server
// at any moment leaves each request's effect all or nothing: ApplyFragment
// is atomic, and ReplaceGraph's only step that touches g, the replace
// request, is one request. But when an operation of a request fails at run time,
// Virtuoso still commits the operations before it (observed: "INSERT DATA
// …; CREATE GRAPH <existing>" answers 500 and keeps the insert). Our
// requests' operations do not fail at run time short of the server
// running out of resources, and a deadlock rolls the whole transaction
// back. A kill -9 of the client leaves at most a temporary graph behind
// (not listed by Graphs; named …:tmp:… so an operator can drop it).
//
// # Errors and retries
//
// A status other than 2xx is an *EndpointError naming the endpoint and
// carrying the server's error text (HTML stripped, the echoed query cut
// off); it wraps the project's one status error, so errors.As finds an
// *httperr.StatusError in it as in every client's. Requests that are idempotent (all but the replace) are retried with
// internal/retry's policy on transport errors and retryable statuses,
// except Virtuoso errors whose SQL state says the request itself is wrong
// (syntax, bad parameter, permission). The replace request is retried
// only when the connection was refused, as repeating one that took effect
// would empty g. Virtuoso answers its errors with 500 (not 400).
//
// # Virtuoso quirks handled
//
//   - Blank nodes in INSERT DATA are rejected (SP031); templates are used.
//   - Blank nodes come back as _:b10000 in N-Triples and nodeID://b10000
//     in JSON results; both are only used within one response.
//   - An IRI <nodeID://b10000> is read as Virtuoso's blank node of that
//     id; such IRIs are refused with ErrInvalidTerm.
//   - Chunked request bodies are ignored; bodies carry Content-Length.
//   - BIND inside UNION branches crashes its compiler in some shapes
//     (sparp_gp_deprecate); the depth probe projects one variable per
//     depth instead.
//
// Literals are stored by Virtuoso in its native types: a typed literal
// with a non-canonical lexical form (e.g. "01"^^xsd:integer) may come back
// canonical.
package sparql
