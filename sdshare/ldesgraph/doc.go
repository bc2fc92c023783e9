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
// Within one run, members are applied newest first per object: a set of
// the objects applied so far (their IRIs and times) is kept for the run,
// so its memory follows the objects that changed since the last run.
package ldesgraph
