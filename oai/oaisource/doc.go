// Package oaisource publishes an OAI-PMH 2.0 repository as a ResourceSync
// Source: a Repository harvests the repository's records into the
// directory a source.Source publishes (package oai/harvest writes the
// record files and keeps the harvest state), journals each batch of pages
// in the Source as soon as the harvester has made it durable, publishes the
// Source's documents as a long harvest goes on, and shows the harvest on
// the Source's status page. It is the engine behind resourcesync serve
// --oai-pmh and publish --oai-pmh, kept out of the command so that a Go
// program gets the same behaviour without copying main.
//
// # Why the harvester names the files
//
// The Source is not asked to rescan the directory after a harvest: the
// harvester reports the paths of each batch of pages it committed (Committed in
// harvest.Config), and Repository journals exactly those (Source.ScanPaths),
// so a harvest of a few changed records costs a few stats, not a walk of
// millions of files. Watching the directory would only see the same
// changes again; full rescans, if wanted, run between harvests (Run),
// never during one, so a rescan never sees half a page.
//
// # The first harvest is the baseline
//
// When nothing was harvested yet and the directory is empty (Empty), the
// first harvest runs before the Source's first scan (Harvest with a nil
// Source): its records then become the Source's initial state, published
// in full (Resource Dump included), instead of a journal of a million
// creations. Meanwhile a server can answer every request with 503 and
// Retry-After (Unavailable), rather than accepting connections it cannot
// answer for an hour. An emptied or unmounted directory under an old
// harvest state is not this case: the Source's scan refuses it as usual.
//
// # What is shown
//
// The endpoint is logged and shown without its user information and with
// secrets (internal/redact) masked, in the errors of net/http too (Clean):
// the status page is public.
package oaisource
