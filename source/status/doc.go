// Package status serves a Source's status page, BASE/.resourcesync/: an
// HTML view (no script, nothing loaded from elsewhere, a meta refresh) of
// what each set publishes and how fast it changes, and of the change
// notifications' hub.
//
// Per set it shows the resources and their total size, the journal's
// newest records (each path a link to the resource), the changes per hour
// over the last 24 hours and per day over the last 30 days as inline SVG
// bar charts, the Change Lists and dumps published (with their sizes, a
// link to each), and links to the Source Description and Capability
// Lists. With an embedded hub it shows the subscribers of each set's
// channel (the callback's host only, with a count: a callback URL can be a
// capability of its subscriber), their cursors, the backlog and the dead
// letters, and links to the metrics.
//
// # Cost
//
// A page never reads the whole inventory or journal. Figures are computed
// by one refresh at a time and reused for Config.MaxAge; a request waits
// at most Config.Wait for a refresh and otherwise shows the previous
// figures. A refresh reads, per set, the store's Stats, the newest
// journal records (Journal from LastSeq-19) and, for the charts, the first
// journal record at or after each bucket boundary (store.JournalBetween,
// which stores answer by binary search or an index): journal sequence
// numbers are consecutive and datetimes never decrease with them, so the
// number of changes in [t0, t1) is seq(t1) - seq(t0), with about 55
// look-ups however long the journal is. The document tree is listed
// (os.ReadDir of a few directories).
//
// The total size is the one figure no store keeps: it is a sum over the
// inventory, made by a background pass over store.ResourcesIn (paged,
// holding no transaction) that a request starts when the set changed
// since the last pass, at most once per max(Config.BytesInterval, 50 times
// the last pass's duration), so that the passes take at most about 2% of
// one core however large the set. Until the first pass ends the size
// shows "—"; after a change it shows the last sum with the time it was
// made. Replicas that share a store show the same figures.
package status
