// Package fragbulk is the bulk fragment request of our own SDShare
// server: many fragments in one response, so that a client keeping a
// store in step does not pay an HTTP exchange (headers built and parsed,
// a scheduler hand-off on each side) per changed resource. It is an
// extension of this toolkit, not of SDShare 1.0.
//
// The server advertises it with a Link header on each fragments feed
// page it serves, rel Rel, pointing at the collection's URL plus Sub
// (B NAME/bulk). A Link header and not a link in the feed: no document
// changes, so every other SDShare client sees the feeds byte for byte
// as before, and a relation it does not know is ignored (RFC 8288).
//
// The wire format is package internal/bulk's (the ResourceSync bulk
// GET's): a POST of text/plain, one path a line, each the fragment URL
// of an entry as its feed links it, relative to the collection's URL
// (fragment?resource=IRI&format=nt); the response answers each path in
// the order asked with "STATUS LENGTH PATH" and, for 200, the fragment's
// N-Triples, the very bytes a GET of that URL with format=nt gives. A
// member the server cannot carry (another format, over
// bulk.MaxMember, an error) has a status other than 200 and no bytes:
// the client GETs it.
//
// The format carries no digest: the client checks each member as it
// checks the body of a single GET (parsed, every statement about the
// entry's resource or the blank nodes it reaches, the size limits), and
// GETs any member that fails; a broken stream sends the rest of the
// request's fragments to plain GETs too.
package fragbulk
