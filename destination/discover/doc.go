// Package discover finds what a ResourceSync Source offers and downloads
// its documents robustly.
//
// A Getter (or the Open shortcut) downloads one document: it retries what
// can succeed on a second try — network errors, resets, bodies shorter than
// their framing, 5xx, 408 and 429 (honouring Retry-After) — with
// exponential backoff and full jitter (internal/retry), and not 404, 403,
// 410 or other client errors, nor a redirect its Origin policy refuses
// (ErrOffOrigin). StallTimeout and MinRate abandon and retry a response
// that stalls or trickles. The body is spooled to a temporary file before it is
// parsed, so a body cut mid-way is retried rather than half read, and
// capped in size (DefaultMaxBytes). The returned Doc decodes the head at
// once and the entries on demand from the spooled copy; Close removes it.
// Where the system allows, the file is unlinked as soon as it is created,
// so not even a crash leaves it behind.
//
// Discover turns what a user gives — a Source's base URL, its
// /.well-known/resourcesync, a Source Description, a Capability List, or a
// Resource List, Change List, dump or index given directly — into the
// Source's sets of resources, each with the locations of the capability
// documents its Capability List offers. For a URL that is not a
// ResourceSync document it follows the discovery mechanisms of the
// specification (§6.3; RS-DISC-1..4 in shared/conformance/RESOURCESYNC.md):
// an HTTP Link header or an HTML <link> with rel="resourcesync", the
// well-known URL beside the page and at the host's root, and the Sitemap
// lines of robots.txt. A document named explicitly that cannot be fetched
// is an error (ErrNamedDocument): only a base URL or a page is searched
// beside.
//
// The Result also gives the Source's base URL, against which resources map
// to local paths, and a short file-safe name per set.
package discover
