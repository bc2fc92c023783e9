package aggstore

import (
	"context"
	"errors"
	"time"
)

// Errors of a Store; match them with errors.Is.
var (
	// ErrNotHolder: the node does not hold a live lease on the Source
	// (never claimed, expired, taken by another node, or released).
	ErrNotHolder = errors.New("aggstore: node does not hold the Source's lease")
	// ErrNotRunning: FinishRun on a run that is not running (finished
	// already, interrupted, or unknown). A run has one outcome.
	ErrNotRunning = errors.New("aggstore: run is not running")
	// ErrFenced: a write of a run whose lease tenure has ended (the
	// lease expired, or another node, or this node after an expiry,
	// holds it under a newer epoch). Nothing was written.
	ErrFenced = errors.New("aggstore: the run's lease epoch is over (fenced)")
	// ErrNodeInUse: Heartbeat as a node whose heartbeat from another
	// handle (another process) is live: two processes would share one
	// identity, and one's leases would be the other's.
	ErrNodeInUse = errors.New("aggstore: the node name is in use by another live process")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("aggstore: closed")
	// ErrInvalid: an argument the store refuses (an empty node or
	// Source, a ttl <= 0, FinishRun with a State other than StateOK or
	// StateFailed, a schedule of another Source).
	ErrInvalid = errors.New("aggstore: invalid argument")
)

// States of a Run.
const (
	StateRunning     = "running"
	StateOK          = "ok"
	StateFailed      = "failed"
	StateInterrupted = "interrupted" // the node died, was stopped or lost the lease before the run ended
)

// Run is one synchronisation of one Source (a pull run, or one applied
// notification batch), as the run history keeps it.
type Run struct {
	ID     int64  `json:"id"` // assigned by StartRun, increasing
	Source string `json:"source"`
	Node   string `json:"node"`
	// Mode: baseline, incremental, audit, notification, sdshare, ...
	Mode  string    `json:"mode"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`
	State string    `json:"state"`
	// Counts over every set of the run.
	Fetched int   `json:"fetched"`
	Deleted int   `json:"deleted"`
	Failed  int   `json:"failed"`
	Bytes   int64 `json:"bytes"`
	// Lag is how far the mirror was behind the Source when the run ended
	// (0: caught up, or unknown).
	Lag time.Duration `json:"lag_ns"`
	// Error is the run's error (redacted), Reason its class (see package
	// aggregate: unreachable, stalled, hostile, delete-refused, ...).
	Error  string `json:"error,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Epoch is the epoch of the lease the run started under (set by
	// StartRun): its writes are fenced to that tenure.
	Epoch int64 `json:"epoch,omitempty"`
}

// Schedule is what the scheduler keeps per Source between runs.
type Schedule struct {
	Source string `json:"source"`
	// Next is when the next run is due.
	Next time.Time `json:"next,omitzero"`
	// Failures counts the consecutive failed runs (for the backoff); 0
	// after a success.
	Failures int `json:"failures"`
	// LastSuccess is the end of the last successful run.
	LastSuccess time.Time `json:"last_success,omitzero"`
	// LastRun is the ID of the last finished run (0: none).
	LastRun int64 `json:"last_run"`
}

// Lease is a node's claim on a Source: only the holder syncs it.
type Lease struct {
	Source  string    `json:"source"`
	Node    string    `json:"node"`
	Expires time.Time `json:"expires"`
	// Epoch numbers the lease's tenure: it stays while the holder
	// renews a live lease, and is greater than every earlier epoch of
	// the Source whenever the lease is taken anew (free, released,
	// expired: by another node or by the same one). A write fenced to
	// an epoch is refused once it is over (Fence).
	Epoch int64 `json:"epoch"`
}

// Store keeps an aggregator's schedule, run history and leases. Every
// method is atomic and durable when it returns (a kill -9 after it keeps
// its effect; before it, none). Implementations are safe for concurrent
// use, and several processes may share one store where the
// implementation says so (pgstore). Every implementation passes the
// contract suite in package aggstoretest.
type Store interface {
	// Heartbeat records node as alive for ttl (the store's clock) and
	// returns the nodes alive, node included, sorted. A node is one
	// handle: while another handle's heartbeat as node is live,
	// Heartbeat refuses with ErrNodeInUse and writes nothing (two
	// processes given one --node). A handle that takes a node name over
	// from another (a restart) ends that handle's lease tenures: their
	// next Claim starts new epochs, so a predecessor that was only
	// paused is fenced.
	Heartbeat(ctx context.Context, node string, ttl time.Duration) ([]string, error)
	// Claim takes or renews node's lease on source for ttl, if the
	// Source is unheld, held by node, or its holder's lease has expired;
	// it reports whether node holds it now. Renewing a live lease keeps
	// its epoch; taking it otherwise (free, released, or expired, even
	// node's own) starts a new epoch and marks the Source's running runs
	// of older epochs interrupted, in the same transaction: a run lives
	// only as long as one unbroken tenure of the lease.
	Claim(ctx context.Context, node, source string, ttl time.Duration) (bool, error)
	// Release gives up node's leases on sources (all of node's leases if
	// none is named); leases node does not hold are left alone.
	Release(ctx context.Context, node string, sources ...string) error
	// Leases lists the live leases, by Source.
	Leases(ctx context.Context) ([]Lease, error)

	// StartRun records r as running (State, ID and Epoch set by the
	// store) if r.Node holds a live lease on r.Source, else ErrNotHolder
	// and nothing is written. It returns the run's ID.
	StartRun(ctx context.Context, r Run) (int64, error)
	// Fence returns nil if the run is still running and its Source's
	// lease is live, held by the run's node under the run's epoch; else
	// ErrFenced (an unknown run too). A run calls it before each write
	// outside the store (its mirror's files and state), so that a node
	// that paused past its lease writes nothing once it could have been
	// taken over: a check that passes leaves the lease's remaining time
	// (at least 2/3 of it while the holder renews every third) before
	// any other node may take it.
	Fence(ctx context.Context, run int64) error
	// FinishRun records the outcome of the running run r.ID (End, State
	// StateOK or StateFailed, counts, Lag, Error, Reason) and next as the
	// Source's schedule, in one transaction. A run that is not running
	// is left alone and ErrNotRunning returned, so no run ends twice; a
	// run whose epoch is no longer its Source's lease epoch is left alone
	// and ErrFenced returned, so that a fenced run writes neither its
	// outcome nor the schedule over the new holder's.
	// The run keeps the Source, Node, Mode and Start StartRun recorded;
	// a zero r.End is the store's now, an empty next.Source the run's
	// Source (another Source is ErrInvalid), a zero next.LastRun r.ID.
	FinishRun(ctx context.Context, r Run, next Schedule) error
	// InterruptRuns marks node's running runs StateInterrupted (End:
	// now), for a node that restarts after a crash; it returns how many.
	InterruptRuns(ctx context.Context, node string, now time.Time) (int, error)
	// Runs returns source's runs, newest first, at most limit (0: all).
	Runs(ctx context.Context, source string, limit int) ([]Run, error)
	// PruneRuns deletes source's finished runs (ok, failed, interrupted)
	// but the newest keep of all its runs, so that the history of a
	// Source followed for years stays bounded; running runs stay. It
	// returns how many were deleted.
	PruneRuns(ctx context.Context, source string, keep int) (int, error)

	// PutSchedule writes s (insert or replace by s.Source).
	PutSchedule(ctx context.Context, s Schedule) error
	// Schedules returns every Source's schedule, by Source.
	Schedules(ctx context.Context) ([]Schedule, error)
	// Forget removes source's schedule and lease (a Source removed from
	// the sources file); its run history stays.
	Forget(ctx context.Context, source string) error

	// Close releases the handle (not the leases: they expire).
	Close() error
}
