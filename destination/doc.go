// Package destination keeps a local directory in step with a ResourceSync
// Source: a baseline copy from a Resource List or Resource Dump, incremental
// updates from Change Lists, and an audit that re-hashes the copy and
// compares it with what the Source says.
//
// Sync discovers the Source, plans what to fetch, delete or verify by
// comparing remote entries with the state kept in DEST/.resourcesync, runs
// the plan with a concurrent fetcher (package fetch), and advances each
// set's checkpoint only after everything it covers is durable. Progress is
// reported as a stream of Events.
//
// A baseline from a Source that advertises a bulk GET (our own `serve`:
// a Link header on the Resource List, see internal/bulk) fetches its
// small resources a batch per request; every member is checked against
// the Resource List as a Resource Dump member is, and whatever is not
// installed that way is fetched by a plain GET (bulk.go).
package destination
