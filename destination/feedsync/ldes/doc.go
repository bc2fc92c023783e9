// Package ldes reads the documents of a Linked Data Event Stream
// (https://w3id.org/ldes/specification): an ldes:EventStream, its
// tree:view and the tree:Nodes its tree:relations lead to, with their
// tree:members, in Turtle, N-Triples or RDF/XML (package rdf's readers).
//
// A member becomes what the consumer needs of it: the object it is a
// version of (ldes:versionOfPath, else dcterms:isVersionOf, else
// as:object, else the member itself), its time (ldes:timestampPath, else
// as:published, prov:generatedAtTime or dcterms:modified), whether it
// records a deletion (an as:Delete or as:Remove member, SEMIC's Cultural
// Heritage Event Streams form, or ldes:DeletedLDESMember), and the length,
// media type and SHA-256 the publisher gave (schema:contentSize,
// schema:encodingFormat, schema:sha256).
//
// It is a parser only, bounded like package iiif: one document at most
// MaxTriples statements (it is indexed in memory to find each member's
// properties), and errors name the document.
package ldes
