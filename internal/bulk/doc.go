// Package bulk is the wire format of a bulk GET: many small resources of
// our own Source in one response, so that a baseline from the Resource
// List does not pay an HTTP exchange (two system calls on each side, a
// scheduler hand-off, headers built and parsed) per file.
//
// `serve` advertises it with a Link header on every document it serves,
// rel Rel, pointing at BASE/.resourcesync/bulk. A Link header and not an
// rs:ln in the Capability List: only the running `serve` has the
// endpoint (a static publish of the same documents must not advertise
// it), and no document changes, so py-resync, the Java and .NET clients
// and any other client see the documents byte for byte as before; a Link
// relation they do not know is ignored by RFC 8288.
//
// The request is a POST of text/plain: one path a line, each as it
// appears in a resource's URL after the base URL (escaped), at most
// MaxPaths of them and MaxRequestBytes in all. The response (MediaType)
// answers each path in the order asked:
//
//	STATUS SP LENGTH SP PATH LF  then LENGTH bytes when STATUS is 200
//
// and ends with "end" LF. A STATUS other than 200 (404, 413, 503, ...)
// has LENGTH 0: the client fetches that resource with a plain GET, which
// gives the full answer (Retry-After and the like). Resources larger than
// MaxMember are never in a bulk response (413).
//
// The format carries no digests on purpose: the client checks every
// member against the Resource List's length and digests, exactly as a
// Resource Dump member is checked (fetch.Install), and fetches a member
// that fails by a plain GET. Reader refuses a member it did not ask for
// (out of order, another path), a length over the one expected or over
// MaxMember, a malformed header line and a stream that ends early.
package bulk
