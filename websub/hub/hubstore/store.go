package hubstore

import (
	"context"
	"errors"
	"iter"
	"time"
)

// Errors returned by a Store. Implementations wrap them with context; match
// them with errors.Is.
var (
	// ErrNotFound: no subscription, job or dead letter with that key or ID.
	ErrNotFound = errors.New("hubstore: not found")
	// ErrNotHolder: the node does not hold the claim on the subscription
	// (never claimed, lease expired, taken by another node, released, or
	// the subscription is gone). Nothing was written: fencing.
	ErrNotHolder = errors.New("hubstore: node does not hold the claim")
	// ErrTopicFull: Subscribe would create a subscription beyond the
	// per-topic limit. The job is deleted all the same.
	ErrTopicFull = errors.New("hubstore: too many subscriptions to this topic")
	// ErrTooManyJobs: AddJob would exceed a pending-verification limit.
	ErrTooManyJobs = errors.New("hubstore: too many pending verifications")
	// ErrLocked: another process holds the state open (embedded stores).
	ErrLocked = errors.New("hubstore: state is locked by another process")
	// ErrCorrupt: a record cannot be decoded.
	ErrCorrupt = errors.New("hubstore: damaged record")
	// ErrInvalid: an argument breaks the contract (empty topic, key or
	// node name, max < 1, ...).
	ErrInvalid = errors.New("hubstore: invalid argument")
	// ErrClosed: the Store was closed.
	ErrClosed = errors.New("hubstore: closed")
)

// Entry is one notification in a topic's log.
type Entry struct {
	Seq         uint64 // set by Append; 1, 2, 3, ... per topic
	Published   time.Time
	ContentType string
	HubURL      string   // sent as rel="hub"; may be empty
	Links       []string // extra Link values, e.g. `<capabilitylist>; rel="resourcesync"`
	Body        []byte
}

// Subscription is an active (verified) subscription and its delivery
// state. Key identifies it: the hub derives it from the normalised topic
// and callback; the store treats it as an opaque non-empty string.
type Subscription struct {
	Key      string
	Topic    string
	Callback string // exactly as the subscriber wrote it
	Secret   string
	Lease    int64 // seconds granted
	Expires  time.Time

	// Delivery state, written with UpdateCursors and AddDeadLetter.
	Cursor    uint64    // last seq delivered (or dead-lettered)
	Attempt   int       // failed attempts at Cursor+1
	FirstFail time.Time // of the current failing run; zero when none
	LastError string
	NextAt    time.Time // no attempt before (backoff); zero when none
}

// CursorUpdate is the delivery state of one subscription after attempts.
type CursorUpdate struct {
	Key       string
	Cursor    uint64 // stored as max(stored, Cursor): never moves backwards
	Attempt   int
	FirstFail time.Time
	LastError string
	NextAt    time.Time
}

// Job is a pending verification of intent (WS-HUB-13..17).
type Job struct {
	ID          uint64 // set by AddJob; increasing in request order
	Key         string // the subscription's key
	Host        string // the callback's host:port: the unit of the per-host limit
	Mode        string // "subscribe" or "unsubscribe"
	Topic       string
	Callback    string
	Secret      string
	Lease       int64 // seconds
	VerifyToken string
	HasToken    bool
	Attempts    int
	NextAt      time.Time // not run before
}

// DeadLetter is a notification that could not be delivered to one
// subscription within the hub's give-up time.
type DeadLetter struct {
	ID          uint64    `json:"id"` // set by AddDeadLetter; increasing
	Topic       string    `json:"topic"`
	Callback    string    `json:"callback"`
	Seq         uint64    `json:"seq"`
	Published   time.Time `json:"published"`
	ContentType string    `json:"content_type"`
	HubURL      string    `json:"hub_url"`
	Links       []string  `json:"links,omitempty"`
	Body        []byte    `json:"body"`
	Attempts    int       `json:"attempts"`
	FirstFail   time.Time `json:"first_fail"`
	LastError   string    `json:"last_error"`
	At          time.Time `json:"at"`
}

// Event says what changed; Watch sends several OR-ed together.
type Event uint8

const (
	// EventEntries: an entry was appended to some topic.
	EventEntries Event = 1 << iota
	// EventSubscriptions: a subscription was created, changed (other than
	// its delivery state), deleted, or a claim was released.
	EventSubscriptions
	// EventJobs: a verification job was added, rescheduled or released.
	EventJobs
)

// Claims is what Claim returns.
type Claims struct {
	Held          []Subscription // what the node holds now, in Key order
	Nodes         int            // nodes alive (claimed within their ttl), the caller included
	Subscriptions int            // all subscriptions, held or not
}

// Counts are totals over the whole state (all nodes).
type Counts struct {
	Subscriptions int
	Jobs          int
	DeadLetters   int
}

// Store is the state of a WebSub hub: topic logs, subscriptions,
// verification jobs, dead letters, and the claims by which the nodes of a
// cluster share the work. See the package documentation for the
// contract. All methods are safe for concurrent use.
type Store interface {
	// Append adds e (e.Seq is ignored) to topic's log and returns its
	// sequence number: the topic's previous head + 1 (1 for a new topic),
	// gapless and never reused, also after Prune. Durable on return.
	Append(ctx context.Context, topic string, e Entry) (uint64, error)
	// Head is the last sequence number appended to topic (0 if none).
	Head(ctx context.Context, topic string) (uint64, error)
	// Heads returns the head of every topic that has ever had an entry.
	Heads(ctx context.Context) (map[string]uint64, error)
	// Entries returns at most max (>= 1) entries of topic with Seq > after,
	// in Seq order: fewer (but at least one if any exists) at the end of
	// the log or when the implementation caps a page; none when there is
	// nothing after `after`. Entries pruned are simply absent.
	Entries(ctx context.Context, topic string, after uint64, max int) ([]Entry, error)
	// Prune deletes the entries of topic with Seq < below and reports how
	// many. It may stop early (a bounded amount of work per call); call
	// it again while it returns > 0. The head is unchanged.
	Prune(ctx context.Context, topic string, below uint64) (int, error)

	// PutSubscription writes s whole (insert or replace by s.Key), claim
	// untouched. The hub itself uses Subscribe and UpdateCursors; this is
	// for tools, imports and tests.
	PutSubscription(ctx context.Context, s Subscription) error
	// GetSubscription returns the subscription with key, or ErrNotFound.
	GetSubscription(ctx context.Context, key string) (Subscription, error)
	// DeleteSubscription removes the subscription and its claim; absent is
	// not an error.
	DeleteSubscription(ctx context.Context, key string) error
	// Subscriptions iterates the subscriptions of topic ("" for all) in
	// Key order, reading in bounded pages (memory does not grow with the
	// number of subscriptions). A change made during iteration may or
	// may not be seen. An error ends the iteration (yielded once).
	Subscriptions(ctx context.Context, topic string) iter.Seq2[Subscription, error]
	// CountSubscriptions counts the subscriptions of topic.
	CountSubscriptions(ctx context.Context, topic string) (int, error)
	// Counts returns the totals.
	Counts(ctx context.Context) (Counts, error)

	// Subscribe applies a verified subscribe request in one transaction:
	// it deletes job jobID (absent is fine) and, if a subscription with
	// s.Key exists, sets its Topic, Callback, Secret, Lease and Expires
	// (delivery state and claim kept); otherwise it inserts s with Cursor
	// = Head(s.Topic) and no delivery state (s's are ignored), unless
	// maxPerTopic > 0 and the topic already has that many: then
	// ErrTopicFull (the job is still deleted). It returns the record as
	// stored.
	Subscribe(ctx context.Context, jobID uint64, s Subscription, maxPerTopic int) (Subscription, error)
	// Unsubscribe deletes job jobID and the subscription key (and its
	// claim) in one transaction; either may be absent.
	Unsubscribe(ctx context.Context, jobID uint64, key string) error

	// UpdateCursors writes the delivery state of subscriptions that node
	// holds, in one transaction. An update for a subscription node does
	// not hold (ErrNotHolder's cases) is not written and its key is
	// returned in refused; the others are written. Cursor never moves
	// backwards.
	UpdateCursors(ctx context.Context, node string, us []CursorUpdate) (refused []string, err error)
	// AddDeadLetter stores d (d.ID is assigned and returned) and applies
	// u to subscription u.Key in one transaction, only if node holds the
	// claim on u.Key: else ErrNotHolder and nothing is written.
	AddDeadLetter(ctx context.Context, node string, d DeadLetter, u CursorUpdate) (DeadLetter, error)
	// DeadLetters iterates the dead letters in ID order, in bounded pages.
	DeadLetters(ctx context.Context) iter.Seq2[DeadLetter, error]
	// GetDeadLetter returns dead letter id or ErrNotFound.
	GetDeadLetter(ctx context.Context, id uint64) (DeadLetter, error)
	// DeleteDeadLetter removes dead letter id (after a replay); absent is
	// ErrNotFound.
	DeleteDeadLetter(ctx context.Context, id uint64) error

	// AddJob stores a new job (j.ID is assigned, increasing) unless
	// maxTotal > 0 and that many jobs are pending, or maxPerHost > 0 and
	// that many are pending for j.Host: then ErrTooManyJobs. The bounds
	// are exact within one process; across nodes they may be exceeded by
	// the requests in flight at the same moment.
	AddJob(ctx context.Context, j Job, maxTotal, maxPerHost int) (Job, error)
	// UpdateJob replaces job j.ID (a rescheduled retry: Attempts,
	// NextAt) and releases its claim; absent is ErrNotFound.
	UpdateJob(ctx context.Context, j Job) error
	// DeleteJob removes job id; absent is not an error.
	DeleteJob(ctx context.Context, id uint64) error
	// Jobs iterates all pending jobs in ID order (admin, tests).
	Jobs(ctx context.Context) iter.Seq2[Job, error]
	// ClaimJobs claims for node, for ttl, and returns in ID order at most
	// max (>= 1) jobs that are due: for each Key only its lowest-ID job
	// is considered (jobs of one subscription run one at a time, in
	// request order), and only if its NextAt <= now and no other node
	// holds a live claim on it. Jobs node already holds and that are
	// still due are returned again (their claim renewed). next is the
	// earliest NextAt among the other lowest-ID jobs not held by another
	// node (zero if none): when to call again.
	ClaimJobs(ctx context.Context, node string, now time.Time, ttl time.Duration, max int) (due []Job, next time.Time, err error)

	// Claim records node as alive for ttl (from the store's clock),
	// renews for ttl every subscription claim node holds, then claims at
	// most max (>= 0) more among the subscriptions nobody holds or whose
	// holder's lease has run out. It returns every subscription node now
	// holds (records as stored: durable cursors) in Key order, the number
	// of live nodes (node included) and of subscriptions, from which a
	// node computes its fair share and Releases what it holds beyond it.
	// A subscription is held by at most one node with a live lease.
	Claim(ctx context.Context, node string, ttl time.Duration, max int) (Claims, error)
	// Release gives up node's claims on the subscriptions keys, so that
	// other nodes may take them at once (EventSubscriptions). With no
	// keys it releases all node's subscription and job claims and
	// forgets node as alive (a clean shutdown). Keys node does not hold
	// are ignored.
	Release(ctx context.Context, node string, keys ...string) error

	// Watch returns a channel that receives the Events that happened
	// after the call, by any handle or node on this state (this one
	// included), coalesced: a value may stand for many changes (OR-ed),
	// and after the last change a value is always received. Cursor
	// updates, dead letters and claims taken or renewed are not
	// signalled. The channel is closed when ctx ends or the Store is
	// closed. It costs no polling of the data.
	Watch(ctx context.Context) (<-chan Event, error)

	// Close releases the handle (not the claims: they expire by their
	// ttl, as when the process dies). Later calls return ErrClosed.
	Close() error
}
