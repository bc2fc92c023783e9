// Package server publishes RDF collections as SDShare 1.0 feeds
// (SDSHARE.md sections 1 and 2, rules SD-SRV-*) and pushes their changes to
// SDShare Push receivers (section 4, SD-PUSH-*).
//
// A collection is a named graph loaded from an RDF file or a directory of
// RDF files (.nt, .ttl, .rdf/.xml/.owl). It is reloaded on filesystem
// events (debounced) and by a periodic stat-based rescan; a file that does
// not parse fails the reload and the last good graph stays served, so a
// syntax error never publishes mass deletions. A symbolic link inside a
// directory is never followed (as the ResourceSync server refuses them):
// it is logged and counted on /healthz, which names no file and quotes
// no error (those are in the log).
//
// # Change tracking
//
// Changes are tracked per resource (every IRI subject) with the Source's
// state store (source/store): one bbolt file per collection by default,
// or any store.Store from Config.OpenStore (PostgreSQL, one writer per
// collection; the conformance tests run on both), whose
// inventory holds one record per resource (Path = the IRI, SHA256 = the
// hash of its fragment, Size = the fragment's N-Triples length) and whose
// journal holds a created, updated or deleted record per change. The first
// load of a collection is its baseline (no journal records, so a new
// server's fragments feed is empty and its snapshot's updated is the
// baseline time); each later load diffs the graph against the inventory and
// appends the differences in one atomic batch, at max(now, last journal
// time), so times never go backwards, also across restarts. The fragments
// feed is the journal; its page cursor is the journal seq, so entries with
// equal times are never lost at a page boundary.
//
// # URLs (below the base URL B)
//
//	B                                         overview feed (one entry per collection)
//	B NAME/                                   collection feed (snapshots + fragments)
//	B NAME/snapshots                          snapshots feed (the current snapshot)
//	B NAME/snapshot/KEY[?format=F]            snapshot data (202 + Retry-After while built)
//	B NAME/snapshot/KEY/chunks                chunked snapshot feed (graphs over ChunkSize resources)
//	B NAME/snapshot/KEY/chunk/I[?format=F]    one chunk
//	B NAME/fragments[?since=T][&page=P]       fragments feed, RFC 5005 next paging
//	B NAME/fragment?resource=IRI[&format=F]   fragment data (SD-SRV-26; empty document when absent)
//	POST B NAME/bulk                          many fragments in one response (bulk.go; an extension,
//	                                          advertised by a Link header on the fragments feed)
//	B healthz, B metrics                      health text, Prometheus metrics
//	B NAME/rs/IRI, B .resourcesync/...        with Config.ResourceSync (below)
//
// Data URLs negotiate by Accept among N-Triples (application/n-triples,
// the default for no Accept or */*; text/plain labelled as such), Turtle
// and RDF/XML (where package rdf writes them); format=nt|txt|ttl|rdf pins
// one, and the feeds link each format by its own URL. An Accept that
// matches nothing gets 406.
//
// # Browsers
//
// A browser's navigation, or any request with ?format=html
// (web.WantsHTML, the toolkit's one policy), gets every feed as an HTML
// page from the same URL (view.go, package sdshare/internal/atomview):
// entries with their links, an entry's title leading to the feed it
// announces (or its data as text/plain), paging links as a pager,
// breadcrumbs up to the collection and the overview, no script. Every
// other client gets the Atom byte for byte, whatever its Accept names:
// Java's HttpURLConnection sends "text/html, image/gif, image/jpeg, *;
// q=.2, */*; q=.2" by default, and Java SDShare clients must get Atom.
// Both carry Vary: Accept, Sec-Fetch-Dest, Sec-Fetch-Mode,
// Upgrade-Insecure-Requests (web.VaryHTML).
// With Config.ResourceSync the ResourceSync documents negotiate the same
// way (package internal/web/docview), so no HTML companions are written.
//
// # On disk
//
// A collection's graph is not held in memory: each load stream-parses
// the files that changed into sorted runs of records (one a file, kept
// in StateDir/NAME.graph while the file's size and mtime stay), merges
// them into one graph file of every subject's statements together, IRI
// subjects first in IRI order, and keeps a sparse index (every 32nd
// subject) to find a subject with one read (index.go). A small change
// of a directory collection (a few files, of a few resources) writes an
// overlay instead: a small graph file of the groups of the subjects it
// touches, read before the graph file, which versions then share; the
// overlays chain until they mask 1/16th of the subjects, when a load
// merges everything again (layer.go). Lookups and walks give what the
// full merge would, so a one-resource change costs in proportion to
// itself, not to the collection. Fragments, labels,
// snapshots and chunks are read from it by streaming; nothing is mapped,
// so the pages read stay in the page cache, out of the process's memory,
// which stays about the same (some 50 MB) at 50,000 triples and at
// 1,000,000. A reload compares only the resources of the files that
// changed (their IRI subjects, old and new) with the inventory, and a
// fragment with blank nodes whose statements as loaded are unchanged is
// not labelled again; a collection of one file, or a change of more than
// affectedMax resources, is compared whole, beside the inventory in path
// order. The graph directory is rebuilt at every start.
//
// Fragments are served in canonical form (rdf.Canonical: structural blank
// node labels, sorted statements), so the N-Triples bytes' SHA-256 and
// length are exactly the inventory's SHA256 and Size, and a file rewritten
// with other blank node labels is no change. Labelling blank nodes is
// the costly part (seconds for 100k of them in cycles), so it is done at
// load, once per change of a fragment (a reload reuses the form of a
// fragment whose loaded triples are unchanged), and the N-Triples of the
// fragments whose labelling takes more than a few milliseconds are kept
// on disk with the version; requests never label those. The work per fragment is bounded (Config.CanonicalSteps,
// rdf.CanonicalBounded): a fragment beyond it is served with its labels
// as loaded (sorted: stable for as long as the file is, and what the
// inventory describes, but a rewrite with other labels is then a change),
// logged, and counted on /healthz and in the metrics. Refusing it (5xx)
// would take a resource the file still holds off every client for good.
//
// # ResourceSync
//
// Collection.Store and Collection.Fragment (FragmentNT) expose the state
// and the fragments to other publishers; Config.ResourceSync publishes
// them with source/publish from the same store (resourcesync.go):
// B .well-known/resourcesync, B .resourcesync/NAME/..., resources at
// B NAME/rs/<escaped IRI>; with Config.Notifier every change is also a
// ResourceSync Change Notification to a WebSub hub (source/notify), topic
// B .resourcesync/NAME/notifications.
//
// Snapshots are written by a background builder to files in the state
// directory, named by the version (journal seq and a hash of the graph),
// and served from there, so a snapshot is always consistent with the
// updated its entry announces.
package server
