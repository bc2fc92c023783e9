package aggregate

import (
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/destination"
)

// Reasons a run failed (SourceStatus.Reason, aggstore.Run.Reason): the
// class of its error, so that a page, a metric or a test can tell a Source
// that is down from one that is hostile.
const (
	ReasonUnreachable   = "unreachable"       // connection refused, DNS, no route
	ReasonStalled       = "stalled"           // no bytes within --timeout, below --min-rate, or the run's deadline
	ReasonHostile       = "hostile"           // malformed or oversized documents, off-origin redirects, loops, paths outside DEST
	ReasonHTTP          = "http-error"        // the Source answered 4xx/5xx after the retries
	ReasonAuth          = "auth"              // 401/403: credentials missing or refused
	ReasonDeleteRefused = "delete-refused"    // more deletions than --max-delete (an emptied Source)
	ReasonFailures      = "resource-failures" // the run ended with resources that failed
	ReasonLocked        = "locked"            // DEST is in use by another process
	ReasonState         = "state"             // DEST's state cannot be read or written
	ReasonFenced        = "fenced"            // the run's lease ended under it (this node paused past it, or lost it): it stopped writing
	ReasonConfig        = "config"            // the Source's line cannot be used (credential file missing, ...)
	ReasonError         = "error"             // anything else
)

// States of a Source in a Snapshot.
const (
	StateScheduled = "scheduled" // waiting for its next run
	StateQueued    = "queued"    // due, waiting for a worker or its host's limit
	StateRunning   = "running"
	StateFollowing = "following" // subscribed; notifications applied as they come
	StateBackoff   = "backoff"   // failed; next run delayed
	StateElsewhere = "elsewhere" // another node holds the lease
)

// SourceStatus is what the aggregator knows of one Source.
type SourceStatus struct {
	ID   string `json:"id"`
	URL  string `json:"url"` // user information removed
	Dest string `json:"dest"`
	Kind string `json:"kind"`
	// Follow is true when the line asks for --follow; Notifications when
	// changes arrive by notification now (else by polling).
	Follow        bool   `json:"follow"`
	Notifications bool   `json:"notifications"`
	State         string `json:"state"`
	// Node holds the lease ("" with a single-process store).
	Node        string    `json:"node,omitempty"`
	LastStart   time.Time `json:"last_start,omitzero"`
	LastEnd     time.Time `json:"last_end,omitzero"`
	LastSuccess time.Time `json:"last_success,omitzero"`
	Next        time.Time `json:"next,omitzero"`
	// Lag is how far the mirror is behind the Source (the largest of its
	// sets: checkpoint to how far the Source's Change Lists reach), known
	// once a run has read both.
	Lag      time.Duration `json:"lag_ns"`
	LagKnown bool          `json:"lag_known"`
	// Failures counts the consecutive failed runs; Reason and LastError
	// are the last failure's class and message ("" after a success).
	Failures  int    `json:"failures"`
	Reason    string `json:"reason,omitempty"`
	LastError string `json:"last_error,omitempty"`
	// Totals since the aggregator started.
	Runs      int   `json:"runs"`
	Succeeded int   `json:"succeeded"`
	Fetched   int64 `json:"fetched"`
	Deleted   int64 `json:"deleted"`
	Failed    int64 `json:"failed"`
	Bytes     int64 `json:"bytes"`
	// Graph is the named graph (SDShare Sources merged into a store).
	Graphs []string `json:"graphs,omitempty"`
}

// Snapshot is a consistent copy of the aggregator's view.
type Snapshot struct {
	Node    string         `json:"node,omitempty"`
	Store   string         `json:"store"` // the store's URL, password hidden
	Started time.Time      `json:"started"`
	Now     time.Time      `json:"now"`
	Workers int            `json:"workers"` // run slots
	Busy    int            `json:"busy"`    // slots in use
	Sources []SourceStatus `json:"sources"` // by ID
	// SourcesError is the last reload's error (the previous Sources are
	// kept), "" when the file was read.
	SourcesError string `json:"sources_error,omitempty"`
}

// Kinds of aggregator events (Event.Kind), besides the Destination's.
const (
	EventRunStart      = "run-start"
	EventRunEnd        = "run-end"
	EventSourceAdded   = "source-added"
	EventSourceRemoved = "source-removed"
	EventSourcesError  = "sources-error"
	EventLease         = "lease" // Status: taken or lost
)

// Event is one line of aggregate --json: a Destination event (or an
// SDShare client's, in the same shape) tagged with its Source, or an
// event of the aggregator itself (run-start, run-end with the run).
type Event struct {
	Source string `json:"source,omitempty"`
	destination.Event
	Run *aggstore.Run `json:"run,omitempty"`
}
