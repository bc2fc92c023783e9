// Package status records what a running mirror (resourcesync sync, and
// sync --follow) does and shows it: a live HTML page and the same figures
// as JSON (Handler), or a self-contained HTML report written atomically
// (WriteReport).
//
// A Recorder is fed the Destination's own event stream
// (destination.Options.Events, the stream sync --json prints; follow's
// subscription states come through it too, see destination.Mirror.Emit):
// there is no second path that could tell another story. Per set it keeps
// the checkpoint the Destination state records (from each run's done
// event), how far the Source's Change Lists reached and so the lag, the
// last run's summary and audit counts, and whether changes arrive by
// notification (with the lease's end) or by polling. Across sets it keeps
// the last changes applied and the last failures (rings), files and bytes
// per minute over the last hour (60 buckets that roll over), and totals
// since the start.
//
// Memory is bounded whatever the run's size: the rings and the buckets
// are fixed, per-set state is one small struct per set. A Recorder is
// safe for concurrent use. Nothing secret is recorded: the Destination's
// events carry no credentials, and user information in a URL
// (https://user:password@host/) is removed before it is kept.
package status
