// Package feed renders a set's change journal (package source/store) as
// the two change feeds the field reads besides ResourceSync: IIIF Change
// Discovery 1.0 (an Activity Streams OrderedCollection of pages, the
// shapes of package feed/activity) and a Linked Data Event Stream (LDES,
// time-fragmented, its members Activity Streams activities in the form of
// SEMIC's Cultural Heritage Event Streams), in Turtle and JSON-LD.
//
// # Pages
//
// Both feeds share one partition of the stream into pages of a fixed size
// (Stream.PageSize items), so page N of the Change Discovery collection
// and node N of the LDES hold the same changes. The stream is:
//
//   - the baseline pages 0 … BasePages-1: a Refresh activity followed by a
//     Create for every resource of the inventory at the time the stream
//     began (the snapshot, Stream.BaseSeq: the journal's last seq then).
//     The journal holds no record for a collection's first scan, and a
//     consumer that starts from nothing expects a Create for every object;
//     the Refresh tells a consumer that reads newest first (the Change
//     Discovery consuming algorithm) that it may stop there. These pages
//     are rendered once, when the stream begins, and never again: a page's
//     cost follows the new changes, never the collection;
//   - the journal pages: page BasePages+j holds the journal records with
//     seq BaseSeq+1+j·PageSize … BaseSeq+(j+1)·PageSize, oldest first.
//     A page is addressed by a seq range, so rendering it reads only its
//     records (store.Journal from its first seq).
//
// Every page but the last is full and never changes: its next link names
// the following page, which always exists (the last page may be empty).
// The last page grows until full. Serving code sends a long immutable
// Cache-Control for a full page and a short one for the last.
//
// # Version IRIs
//
// An LDES member is a version of a resource: its IRI is the node's IRI
// with a fragment naming the change ("#s" and the journal seq, "#b" and
// the baseline index), dcterms:isVersionOf the resource URL, its type the
// activity (as:Create, as:Update, as:Delete), as:published its time
// (ldes:timestampPath), schema:contentSize, schema:encodingFormat and
// rs:hash ("md5:… sha-256:…", the ResourceSync spelling, as in
// activity.Ref.Digest) for what the change left. A Change Discovery
// activity has its object's id, type and digest.
//
// Package feed only renders (io.Writer in, no files, no HTTP): package
// source/publish writes the pages with its atomic writer and package
// source/server serves them with their headers and content negotiation.
package feed
