// Package readstore offers the embedded state of a Source (package
// source/store/bolt, the layout STATE/SET/state.db) read-only to an
// OAI-PMH provider (package oai/provider) running in another process than
// the Source's writer: resourcesync oai serve beside a publish.
//
// The embedded store admits one writer and no reader beside it (bbolt
// locks the whole file), so a provider that kept the state open would
// lock publish out for as long as it runs. A Store opens the state (read
// only: no write, no fsync) when a request needs it and closes it when no
// request does, so the writer updates it between requests; and since
// harvesters whose requests overlap would otherwise keep the shared lock
// for ever, it never holds it longer than a quarter of a second at a
// stretch: past that, new requests wait, the ones in flight finish, and
// the state stays closed for two of the writer's lock polls. A writer
// thus waits at most a quarter of a second plus the longest request in
// flight plus one poll; the harvesters, at most that pause (then the
// writer's run).
//
// A Store's writes (Apply, PutMeta) fail with ErrReadOnly.
package readstore
