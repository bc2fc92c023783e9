package aggregate

import "time"

// result is what one run of one Source did, over all its sets (or, for
// an SDShare Source, its collections): what the run history and the
// status keep.
type result struct {
	Mode                     string // baseline, incremental, audit, notification, sdshare
	Fetched, Deleted, Failed int
	Bytes                    int64
	// DeleteRefused counts deletions --max-delete refused, or that a
	// Source that started afresh would have made (Reset says how that
	// showed; destination.Options.AllowReset).
	DeleteRefused int
	Reset         string
	// Lag is how far the mirror is behind the Source after the run (the
	// largest over its sets); LagKnown false when it cannot be told.
	Lag      time.Duration
	LagKnown bool
	// Graphs are the named graphs an SDShare run wrote.
	Graphs []string
	// Note says why a run without Err failed (the first resource that
	// failed, say).
	Note string
	// Err is why the run failed (nil: it succeeded); Reason its class.
	Err    error
	Reason string
}

// ok reports whether the run counts as a success.
func (r result) ok() bool { return r.Err == nil && r.Failed == 0 && r.DeleteRefused == 0 }
