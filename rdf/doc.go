// Package rdf is the RDF vocabulary shared by the SDShare server, client and
// stores: terms and triples, streaming readers for N-Triples, Turtle and
// RDF/XML, writers for the same formats, media-type negotiation, an
// in-memory indexed graph, the SDShare fragment (a resource's statements
// with their blank-node closure) and blank-node-aware comparison.
//
// Readers yield triples one at a time (iter.Seq2[Triple, error]) so that a
// snapshot of millions of triples is never held in memory. What a reader
// keeps is bounded too: one token (16 MiB), the nesting (1,000 levels) and
// the bytes kept from one token to the next (MaxRetainedBytes: prefixes,
// namespaces, base IRIs, open statements); a document beyond them fails
// with a *SyntaxError matching ErrLimit. Blank node labels are scoped to
// one document: a reader returns them as written and callers that merge
// documents give them fresh identities.
package rdf
