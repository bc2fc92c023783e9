// Package provider offers a collection as an OAI-PMH 2.0 data provider: an
// http.Handler answering the six verbs (Identify, ListMetadataFormats,
// ListSets, ListIdentifiers, ListRecords, GetRecord) over GET and POST
// (application/x-www-form-urlencoded), at the granularity of a second.
//
// # Collections
//
// A Collection lists items in a stable order from a cursor, filtered by
// datestamp and set, and opens an item's bytes. StoreCollection adapts the
// state of a ResourceSync Source (package source/store: inventory and
// journal, one Store per set).
//
// # Identifiers
//
// An item's OAI identifier is "oai:" + RepositoryIdentifier + ":" + its ID,
// the ID being the resource's URL path relative to the collection's base
// URL, as escaped in the URL (so identifiers are stable, reversible and
// valid URIs): the resource http://example.org/data/a%20b.xml of a Source
// based at http://example.org/data/ is oai:example.org:a%20b.xml. With
// several sets, the set's name is the first segment (oai:example.org:SET/path).
//
// # Datestamps
//
// An item's datestamp is when its last change was recorded (the journal
// record's datetime, or the baseline scan's for an item unchanged since),
// never the file's modification time: a file copied in with an old mtime
// still becomes visible to a harvest from the time it was recorded, so
// incremental harvests (from = the responseDate of the previous one) miss
// nothing. Deleted records are persistent: a deletion keeps the datestamp of
// its journal record. (A journal record's datetime is taken just before
// its batch commits: a harvest answered in between misses the change and
// its responseDate may be a second past it; a harvester that overlaps from
// by one granule, as oai/harvest does, never misses it.)
//
// A mirror made by sync is served the same way by giving it a journal of
// its own: resourcesync oai serve --mirror scans the mirror as a Source
// does, so datestamps are when the mirror's changes were found.
//
// # Metadata formats
//
// Every item is disseminated as oai_dc (dc:identifier the resource URL,
// dc:title its path, dc:date its lastmod, dc:format its media type and its
// length in bytes). A Format configured with a namespace is offered for the
// XML items whose root element is in that namespace: the record's metadata
// is the file's root element as stored (without XML declaration, doctype or
// leading comments). Such a file must be UTF-8 and well-formed.
//
// # Resumption tokens
//
// Tokens are stateless: they encode the request's arguments, the cursor of
// the last item sent, the number of items sent and an expiry, with an HMAC
// so a damaged or altered token is answered with badResumptionToken. The
// server keeps nothing per harvest and streams every page, so memory does
// not grow with the collection.
package provider
