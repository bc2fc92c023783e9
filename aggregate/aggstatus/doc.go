// Package aggstatus shows what resourcesync aggregate does, from its
// aggregate.Snapshot alone (it never reaches into the engine): a live
// HTML page listing every Source, the Snapshot as JSON and as Prometheus
// metrics (Handler), and a self-contained HTML report written atomically
// (WriteReport).
//
// The page is plain HTML like every view of the toolkit (internal/web:
// no script, the CSP that lets it load nothing, a meta refresh): sorting
// is done by the server (?sort=lag|errors|success|name, links in the
// column headers), so it works without JavaScript and the JSON is sorted
// the same way. Each Source's own page (the destination/status Recorder
// of its mirror) is mounted below it, at /source/<escaped id>/: ids
// contain slashes ("libraries/uni-a"), so an id is one path segment,
// escaped with url.PathEscape, and an id the Snapshot does not list is
// not found, whatever it spells.
//
// Nothing secret is shown: every text that comes from a Source (URLs,
// error messages) is redacted (user information and secret query
// parameters removed: destination/status.Redact), made valid UTF-8 and
// cut to destination/status.MaxText before any output, HTML, JSON or
// metrics, sees it.
package aggstatus
