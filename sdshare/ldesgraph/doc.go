// Package ldesgraph keeps the members of a Linked Data Event Stream in a
// graph store (sdshare/graphstore: the embedded store of `sdshare sync
// --graph-store`, or a SPARQL endpoint): the latest version of each
// member in its own named graph, named by the IRI the member is a version
// of (ldes:versionOfPath, dcterms:isVersionOf), and a member that records
// a deletion drops that graph.
//
// The stream is read by destination/feedsync (WalkLDES), through the
// caller's Getter; Apply returns the position to pass to the next run
// (the newest member time applied, and the nodes to resume from), which
// the caller keeps. A graph is replaced in one transaction with its
// version's statements (ReplaceGraph), so a run killed at any point
// leaves every graph either at its old version or at its new one, and the
// next run, starting from the position of the last completed run, applies
// again what the killed one did not record.
//
// Within one run, only the newest version of each object is applied: the
// versions read are spooled to scratch files (internal/extsort, in the
// system's temporary directory) and read back the newest per object, in
// the objects' order, so that a run's memory does not follow the number
// of objects that changed since the last run.
package ldesgraph
