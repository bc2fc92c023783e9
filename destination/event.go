package destination

import "time"

// Event kinds. A run emits Plan once per set, then one event per resource
// handled, Phase events between stages, and Done per set.
const (
	EventPlan    = "plan"    // Set, Mode; Total entries and TotalBytes when known (-1 unknown)
	EventPhase   = "phase"   // Message: what the run does next
	EventFetched = "fetched" // URI, Path, Bytes: installed
	EventSkipped = "skipped" // URI, Path, Bytes: already in sync
	EventDeleted = "deleted" // URI, Path: removed because the Source deleted it
	EventKept    = "kept"    // URI, Path, Message: not deleted (--no-delete, changed locally, not ours)
	// EventVanished: URI, Path, Message, Change: the resource changed or
	// went away at the Source after the run read the lists naming it
	// (its GET answered 404 or other bytes), and the Source's later state
	// explained it: its newer version is fetched (Change "updated") or
	// it is deleted (Change "deleted"); the fetched or deleted event
	// follows. Not a failure.
	EventVanished = "vanished"
	EventFailed   = "failed"  // URI, Path, Error
	EventAudit    = "audit"   // URI, Path, Status: one of the Audit* statuses
	EventRetry    = "retry"   // URI, Error: a fetch attempt failed and is retried
	EventDone     = "done"    // Set, Message: the set's summary line
	EventTotal    = "total"   // Set, Total: a better estimate of the current plan's total (lists read so far)
	EventWarning  = "warning" // URI, Path, Message: installed, but something deserves attention (digests that could not be verified)
	// EventSubscription: Set, Status (SubNotifications, SubPolling or
	// SubStopped),
	// URI (the hub, when there is one), Expires (the lease, while
	// notifications are active), Message (why polling). Emitted by
	// destination/follow through Mirror.Emit.
	EventSubscription = "subscription"
)

// Statuses of an EventSubscription.
const (
	SubNotifications = "notifications" // subscribed: changes are pushed
	SubPolling       = "polling"       // no hub, or it is unreachable: the Change Lists are polled
	SubStopped       = "stopped"       // following ended (unsubscribed)
)

// Event reports progress. It marshals to one JSON object per event.
type Event struct {
	Time       time.Time `json:"time"`
	Kind       string    `json:"event"`
	Set        string    `json:"set,omitempty"`
	Mode       string    `json:"mode,omitempty"`
	URI        string    `json:"uri,omitempty"`
	Path       string    `json:"path,omitempty"`
	Bytes      int64     `json:"bytes,omitempty"`
	Total      int64     `json:"total,omitempty"`
	TotalBytes int64     `json:"total_bytes,omitempty"`
	Status     string    `json:"status,omitempty"`
	Message    string    `json:"message,omitempty"`
	Error      string    `json:"error,omitempty"`
	// Change and DateTime, on fetched, deleted and failed events of a
	// change (a Change List entry or a notification): its type (created,
	// updated, deleted) and its datetime, when known.
	Change   string    `json:"change,omitempty"`
	DateTime time.Time `json:"datetime,omitzero"`
	// Checkpoint, on done events of runs that can write, is the set's
	// checkpoint after the run; SourceUntil is how far the Source's
	// Change Lists (or the notification) reached (zero: unknown).
	Checkpoint  *Checkpoint `json:"checkpoint,omitempty"`
	SourceUntil time.Time   `json:"source_until,omitzero"`
	// Expires is the subscription lease's end (subscription events).
	Expires time.Time `json:"expires,omitzero"`
}

// Audit statuses.
const (
	AuditInSync       = "in-sync"
	AuditMissing      = "missing"      // listed by the Source, absent here
	AuditChanged      = "changed"      // present here with other bytes
	AuditExtra        = "extra"        // here, not at the Source
	AuditUnverifiable = "unverifiable" // the Source gives neither a usable hash nor a length
)
