// Package iiif reads the documents of an IIIF Change Discovery 1.0 stream
// (https://iiif.io/api/discovery/1.0/): the OrderedCollection at its root
// and its OrderedCollectionPages, into the shapes of feed/activity.
//
// It is a parser only: no HTTP and no walking. The consumer
// (destination/feedsync) fetches pages through the mirror's own Getter, so
// size limits, retries, credentials and the origin policy are the
// ResourceSync client's; what this package bounds is what one document
// may hold (MaxItems) and what it accepts as a document, so that a
// malformed or hostile page fails with an error that names it.
package iiif
