// Package push implements SDShare Push (the Sesam companion note,
// SDSHARE.md section 4, SD-PUSH-*): a sender POSTs each changed fragment
// to a receiver, which updates its copy of the resource.
//
// # The request
//
//	POST BASE?resource=R[&resource=R2...][&graph=G]
//	Content-Type: application/n-triples (or text/turtle, application/rdf+xml)
//	SDShare-Updated: 2026-11-24T00:30:00.123456789Z   (optional, see below)
//
//	<the fragment of R: its statements and their blank-node closure>
//
// An empty body means R was deleted. Repeating resource batches several
// fragments in one body (SD-PUSH-8): the receiver splits the body by
// subject closure (each R's statements and the blank nodes they reach) and
// applies each part as the fragment of its resource.
//
// # Order: the SDShare-Updated header
//
// The note says nothing about order, yet retries, duplicates and proxies
// can deliver an older fragment of R after a newer one, and the older one
// must not win. A sender therefore sends, in the header SDShare-Updated
// (HeaderUpdated), the instant of the change the fragment represents (the
// updated of its fragments feed entry; RFC 3339, fractions kept). The
// receiver remembers, per graph and resource, the newest instant it
// admitted (Order, a bbolt file, durable) and acknowledges an older
// fragment with 200 and "stale" without applying it. Equal instants are
// applied again (idempotent: applying a fragment twice is applying it
// once). The newest instant is recorded before the store is changed, so a
// crash between the two leaves the store behind the record only for a
// request that never got its 2xx: the sender resends that same fragment,
// whose instant equals the record, and it is applied. A sender that has
// no instant may send its stream's sequence number in SDShare-Sequence
// instead (compared the same way, only with other sequence numbers).
// Requests with neither header are applied as they come (last writer
// wins), as the note's receivers do.
//
// # Hostile peers
//
// A receiver without credentials is reachable by every web page a local
// browser opens, which may POST a form, text/plain or an empty body
// anywhere without a CORS preflight. The Receiver therefore refuses a
// request whose Origin or Sec-Fetch-Site names another origin (403), a
// Content-Type that is not an RDF type, an empty body's included (415),
// and text/plain, N-Triples' old type, unless AllowTextPlain; a
// preflight is never allowed. A version too far ahead is refused (400)
// and never recorded: an instant beyond MaxClockSkew after the
// receiver's clock, a sequence number above MaxSequence or more than
// MaxSequenceGap past the highest its graph admitted, or than 0 for a
// graph's first unless TrustFirstSequence (recorded, a forged one would
// make every later genuine push of the resource stale). Each
// request reserves its body's size times ParseFactor in MemoryBudget
// before reading it, or gets 503 with Retry-After (the body then read
// and discarded, so that a sender that writes all of it before reading
// sees the answer, not a connection reset), and more as its
// statements need (sdshare.TripleMemory each: a dense Turtle body holds
// many more per byte), or 413 beyond the budget. GET status counts the
// refusals.
package push

// Request headers that place a pushed fragment in its resource's history.
const (
	// HeaderUpdated carries the instant of the change (RFC 3339).
	HeaderUpdated = "SDShare-Updated"
	// HeaderSequence carries the sender's sequence number of the item
	// (an unsigned decimal, increasing along the sender's stream); used
	// when HeaderUpdated is absent.
	HeaderSequence = "SDShare-Sequence"
)
