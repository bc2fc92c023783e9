// Package sdshare holds the names SDShare 1.0 defines (namespaces, link
// relations, media types). Its subpackages implement the protocol:
//
//   - atom: the Atom feed model, a strict writer and a lenient reader
//   - server: feeds over RDF collections with per-resource change tracking
//   - client: keeps a graph store in step with a server's feeds
//   - graphstore: the store a client writes to (embedded, SPARQL 1.1)
//   - push: SDShare Push sender and receiver
package sdshare

// Namespaces and link relations (SDSHARE.md section 1).
const (
	NS = "http://www.sdshare.org/2012/core/"

	RelCollectionFeed    = NS + "collectionfeed"
	RelSnapshotsFeed     = NS + "snapshotsfeed"
	RelFragmentsFeed     = NS + "fragmentsfeed"
	RelSnapshot          = NS + "snapshot"
	RelChunkedSnapshot   = NS + "chunked-snapshot"
	RelSnapshotComponent = NS + "snapshot-component"
	RelFragment          = NS + "fragment"

	// LegacyNS is the pre-2012 (CEN/egovpt) namespace older feeds use.
	LegacyNS = "http://www.egovpt.org/sdshare"

	// ExtLastModified is the de-facto per-resource last-modified property.
	ExtLastModified = "http://www.sdshare.org/2012/extension/lastmodified"

	AtomType = "application/atom+xml"
)

// TripleMemory is what one statement of a fragment or push costs the
// client or receiver that holds the document's statements at once,
// measured: its rdf.Triple (168 bytes) and strings, the slice's growth,
// its copy into the fragments Split builds, the store's write and the
// garbage collector's headroom (sdshare receive's peak RSS grew by 130 MB
// for one push of 131,072 statements, as ParseFactor's 46 MB for 1 MB of
// short N-Triples). The bytes of a document do not bound it: Turtle holds
// a statement in 2 bytes ("1,"), N-Triples needs 15 or more, and a 4 MB
// Turtle body of object lists parsed into 660 MB of live heap.
const TripleMemory = 1000
