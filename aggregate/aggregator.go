package aggregate

import (
	"context"
	"net/http"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// Options configure an Aggregator. Root and Store are required.
type Options struct {
	// Root is the directory every Source's DEST is relative to.
	Root string
	// Store keeps the schedule, run history and leases; StoreName is
	// what the status shows of it (its URL, password hidden).
	Store     aggstore.Store
	StoreName string
	// Node names this process in a shared store (default "local");
	// LeaseTTL is how long its leases live without renewal (default 30s):
	// a killed node's Sources move to the others within it.
	Node     string
	LeaseTTL time.Duration
	// Workers is the number of Sources run at once (default 4), PerHost
	// the most of them on one host (default 2), SourceWorkers the
	// concurrent downloads within one run (default 4; a line's --workers
	// overrides it).
	Workers, PerHost, SourceWorkers int
	// Interval is the default time between polls (default 1h), Jitter
	// the fraction of it a run may be moved by (default 0.1), RunTimeout
	// a run's deadline (default 1h), MaxBackoff the longest delay after
	// failures (default: the Source's interval).
	Interval   time.Duration
	Jitter     float64
	RunTimeout time.Duration
	MaxBackoff time.Duration
	// Client makes the HTTP client of one Source (credentials from its
	// files); default: the project's client (internal/httpclient) with
	// the Source's files. Tests give one that dials loopback only.
	Client func(s Source) (*http.Client, error)
	// CallbackBase is the public URL at which Callbacks() is served (as
	// the hubs reach it); "" makes --follow Sources poll only. HubClient
	// makes the subscription requests (default: Client's).
	CallbackBase string
	HubClient    *http.Client
	// GraphStore receives the SDShare Sources' collections, one named
	// graph each (nil: SDShare Sources fail with a config error).
	GraphStore graphstore.Store
	// Events, if set, receives every event (safe for concurrent use).
	Events func(Event)
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Aggregator runs the Sources it is given.
type Aggregator struct {
	opt Options
}

// New checks opt and makes an Aggregator; Run starts it.
func New(opt Options) (*Aggregator, error) {
	return &Aggregator{opt: opt}, nil
}

// SetSources replaces the Sources (a reload of the sources file): new
// ones are scheduled, removed ones stop (their mirrors stay), changed
// ones restart with their new options at their next run.
func (a *Aggregator) SetSources(ss []Source) {}

// SetSourcesError records that a reload failed (the Sources stay).
func (a *Aggregator) SetSourcesError(err error) {}

// Run runs the Sources until ctx ends; then it stops every run, leaves
// the hubs (unsubscribes), releases its leases and returns.
func (a *Aggregator) Run(ctx context.Context) error { <-ctx.Done(); return nil }

// Callbacks is the handler of the notification callbacks of every
// followed Source; serve it at Options.CallbackBase.
func (a *Aggregator) Callbacks() http.Handler { return http.NotFoundHandler() }

// Snapshot returns the aggregator's view of every Source.
func (a *Aggregator) Snapshot() Snapshot { return Snapshot{} }

// Detail is the status page of one Source (the page sync --status-addr
// serves, for that Source's events), nil for an unknown ID.
func (a *Aggregator) Detail(id string) http.Handler { return nil }
