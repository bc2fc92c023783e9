package status

import (
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/redact"
)

// Defaults of Options.
const (
	DefaultChanges  = 50
	DefaultFailures = 50
	// Minutes is how many one-minute buckets of throughput are kept.
	Minutes = 60
)

// Options configure a Recorder.
type Options struct {
	// Source is the SOURCE the mirror was given, Dest its directory, and
	// Command what runs ("sync --follow", "sync --audit", ...): shown as is
	// (user information in Source is removed).
	Source, Dest, Command string
	// Changes and Failures bound the rings (defaults DefaultChanges,
	// DefaultFailures).
	Changes, Failures int
	// Now is the clock (default time.Now); it places events without a
	// time and measures uptime and lag.
	Now func() time.Time
}

// Change is one change applied (or, in a dry run, that would be).
type Change struct {
	Time time.Time `json:"time"`
	Set  string    `json:"set"`
	// Type is the change's type (created, updated, deleted) when it came
	// from a Change List or a notification; "fetched" for a baseline's.
	Type string `json:"type"`
	URI  string `json:"uri"`
	Path string `json:"path"`
	// Bytes installed (0 for a deletion).
	Bytes int64 `json:"bytes"`
	// DateTime is the change's datetime at the Source, when known.
	DateTime time.Time `json:"datetime,omitzero"`
}

// Outcomes of a Failure.
const (
	Retried = "retried"  // an attempt failed and is retried
	GaveUp  = "given up" // the resource failed in this run (the next run or catch-up tries again)
)

// Failure is a failed attempt or a failed resource.
type Failure struct {
	Time    time.Time `json:"time"`
	Set     string    `json:"set,omitempty"`
	URI     string    `json:"uri"`
	Path    string    `json:"path,omitempty"`
	Error   string    `json:"error"`
	Outcome string    `json:"outcome"` // Retried or GaveUp
}

// Totals count since the Recorder started.
type Totals struct {
	Fetched int64 `json:"fetched"`
	Bytes   int64 `json:"bytes"`
	Deleted int64 `json:"deleted"`
	Skipped int64 `json:"skipped"`
	Kept    int64 `json:"kept"`
	Failed  int64 `json:"failed"`
	Retries int64 `json:"retries"`
	Runs    int64 `json:"runs"` // done events: one per set per run or notification
}

// Set is what is known of one set.
type Set struct {
	Name string `json:"name"`
	// Checkpoint is what the Destination state records after the set's
	// last run: Until is the point up to which every change is applied.
	Checkpoint *destination.Checkpoint `json:"checkpoint,omitempty"`
	// SourceUntil is how far the Source's Change Lists (or the last
	// notification) reached when last read.
	SourceUntil time.Time `json:"source_until,omitzero"`
	// Lag is how far the checkpoint is behind SourceUntil (0: caught up
	// with everything the Source has published); LagKnown is false until
	// both are known.
	Lag      time.Duration `json:"lag_ns"`
	LagKnown bool          `json:"lag_known"`
	// Age is now - Checkpoint.Until: how old the newest point this copy
	// is sure of is.
	Age time.Duration `json:"age_ns"`
	// Newest is the datetime at the Source of the newest change applied.
	Newest time.Time `json:"newest_applied,omitzero"`
	// LastRun is when the last run (or notification) of the set ended,
	// Mode what it was, Summary its one-line account.
	LastRun time.Time `json:"last_run,omitzero"`
	// Failed counts the resources that failed in the last run: their
	// changes hold the checkpoint back until a run applies them.
	Failed  int            `json:"failed_last_run"`
	Mode    string         `json:"mode,omitempty"`
	Summary string         `json:"summary,omitempty"`
	Audit   map[string]int `json:"audit,omitempty"`
	// Follow is how changes arrive with --follow: destination.SubNotifications
	// or destination.SubPolling ("" without --follow); Hub is the hub's
	// URL, Expires the lease's end, Why the reason for polling.
	Follow  string    `json:"follow,omitempty"`
	Hub     string    `json:"hub,omitempty"`
	Expires time.Time `json:"lease_expires,omitzero"`
	Why     string    `json:"follow_reason,omitempty"`
}

// Minute is the throughput of one minute.
type Minute struct {
	Start time.Time `json:"start"`
	Files int64     `json:"files"` // fetched and deleted
	Bytes int64     `json:"bytes"` // fetched
}

// Snapshot is a consistent copy of what a Recorder knows.
type Snapshot struct {
	Source  string        `json:"source"`
	Base    string        `json:"base,omitempty"`
	Dest    string        `json:"dest,omitempty"`
	Command string        `json:"command,omitempty"`
	Started time.Time     `json:"started"`
	Now     time.Time     `json:"now"`
	Uptime  time.Duration `json:"uptime_ns"`
	// Callback is where sync --follow receives notifications (its URL,
	// and whether the port is ephemeral).
	Callback string `json:"callback,omitempty"`
	// Phase is the last thing the run said it does next.
	Phase  string `json:"phase,omitempty"`
	Totals Totals `json:"totals"`
	Sets   []Set  `json:"sets"`
	// Changes and Failures, newest first.
	Changes  []Change  `json:"changes"`
	Failures []Failure `json:"failures"`
	// Throughput: the last Minutes minutes, oldest first, the current
	// minute last.
	Throughput []Minute `json:"throughput"`
	// Bounds of the rings, so a reader knows the lists are the newest.
	MaxChanges  int `json:"max_changes"`
	MaxFailures int `json:"max_failures"`
}

type bucket struct {
	minute       int64 // Unix minute; the bucket is empty for any other
	files, bytes int64
}

// Recorder keeps a mirror's status; Handle is its input.
type Recorder struct {
	opt Options

	mu       sync.Mutex
	started  time.Time
	base     string
	callback string
	phase    string
	totals   Totals
	sets     map[string]*Set
	pending  map[string]int // failures of the run under way, per set
	changes  ring[Change]
	failures ring[Failure]
	buckets  [Minutes]bucket
}

// New returns a Recorder that starts now.
func New(opt Options) *Recorder {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Changes <= 0 {
		opt.Changes = DefaultChanges
	}
	if opt.Failures <= 0 {
		opt.Failures = DefaultFailures
	}
	opt.Source = Redact(opt.Source)
	return &Recorder{opt: opt, started: opt.Now(), sets: map[string]*Set{}, pending: map[string]int{},
		changes: newRing[Change](opt.Changes), failures: newRing[Failure](opt.Failures)}
}

// SetCallback records where sync --follow receives the hub's
// notifications (its callback URL, and whether the port is ephemeral).
func (r *Recorder) SetCallback(callback string) {
	r.mu.Lock()
	r.callback = Redact(callback)
	r.mu.Unlock()
}

// SetBase records the Source's base URL (once discovery found it).
func (r *Recorder) SetBase(base string) {
	r.mu.Lock()
	r.base = Redact(base)
	r.mu.Unlock()
}

// Handle records one event. It is safe for concurrent use and cheap (no
// allocation that grows with the run).
func (r *Recorder) Handle(e destination.Event) {
	t := e.Time
	if t.IsZero() {
		t = r.opt.Now()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Kind {
	case destination.EventPhase:
		r.phase = clip(RedactText(e.Message))
	case destination.EventFetched, destination.EventDeleted:
		typ := e.Change
		if typ == "" {
			typ = "fetched"
			if e.Kind == destination.EventDeleted {
				typ = "deleted"
			}
		}
		var b int64
		if e.Kind == destination.EventFetched {
			b = e.Bytes
		}
		r.changes.add(Change{Time: t, Set: e.Set, Type: typ, URI: clip(Redact(e.URI)), Path: clip(e.Path), Bytes: b, DateTime: e.DateTime})
		if e.Kind == destination.EventFetched {
			r.totals.Fetched++
			r.totals.Bytes += b
		} else {
			r.totals.Deleted++
		}
		r.count(t, b)
		if s := r.set(e.Set); s != nil && e.DateTime.After(s.Newest) {
			s.Newest = e.DateTime
		}
	case destination.EventSkipped:
		r.totals.Skipped++
	case destination.EventKept:
		r.totals.Kept++
	case destination.EventFailed:
		r.totals.Failed++
		if e.Set != "" {
			r.pending[e.Set]++
		}
		r.failures.add(Failure{Time: t, Set: e.Set, URI: clip(Redact(e.URI)), Path: clip(e.Path), Error: clip(RedactText(e.Error)), Outcome: GaveUp})
	case destination.EventRetry:
		r.totals.Retries++
		r.failures.add(Failure{Time: t, Set: e.Set, URI: clip(Redact(e.URI)), Path: clip(e.Path), Error: clip(RedactText(e.Error)), Outcome: Retried})
	case destination.EventPlan:
		if s := r.set(e.Set); s != nil && e.Mode == "audit" {
			s.Audit = nil // a new audit's counts
		}
	case destination.EventAudit:
		if s := r.set(e.Set); s != nil {
			if s.Audit == nil {
				s.Audit = map[string]int{}
			}
			s.Audit[e.Status]++
		}
	case destination.EventDone:
		r.totals.Runs++
		r.phase = "" // what it said it did next is done
		s := r.set(e.Set)
		if s == nil {
			return
		}
		s.LastRun, s.Mode, s.Summary = t, e.Mode, clip(RedactText(e.Message))
		s.Failed = r.pending[e.Set]
		delete(r.pending, e.Set)
		if e.Checkpoint != nil {
			cp := *e.Checkpoint
			s.Checkpoint = &cp
		}
		if !e.SourceUntil.IsZero() {
			s.SourceUntil = e.SourceUntil
		}
	case destination.EventSubscription:
		if s := r.set(e.Set); s != nil {
			s.Follow, s.Hub, s.Expires, s.Why = e.Status, clip(Redact(e.URI)), e.Expires, clip(RedactText(e.Message))
		}
	}
}

// set returns the set's record, made on first use; nil for events of no
// set.
func (r *Recorder) set(name string) *Set {
	if name == "" {
		return nil
	}
	s := r.sets[name]
	if s == nil {
		s = &Set{Name: name}
		r.sets[name] = s
	}
	return s
}

func (r *Recorder) count(t time.Time, b int64) {
	m := t.Unix() / 60
	if t.Unix() < 0 {
		return
	}
	k := &r.buckets[m%Minutes]
	if k.minute != m {
		if k.minute > m {
			return // older than the window
		}
		*k = bucket{minute: m}
	}
	k.files++
	k.bytes += b
}

// Snapshot returns a copy of what is known now.
func (r *Recorder) Snapshot() Snapshot {
	now := r.opt.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Snapshot{Source: r.opt.Source, Base: r.base, Callback: r.callback, Dest: r.opt.Dest, Command: r.opt.Command,
		Started: r.started, Now: now, Uptime: now.Sub(r.started), Phase: r.phase, Totals: r.totals,
		Changes: r.changes.newestFirst(), Failures: r.failures.newestFirst(),
		MaxChanges: r.opt.Changes, MaxFailures: r.opt.Failures, Sets: []Set{}}
	names := make([]string, 0, len(r.sets))
	for n := range r.sets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := *r.sets[n]
		if c.Checkpoint != nil {
			cp := *c.Checkpoint
			c.Checkpoint = &cp
			if !cp.Until.IsZero() {
				c.Age = now.Sub(cp.Until)
				if !c.SourceUntil.IsZero() {
					c.LagKnown = true
					c.Lag = max(0, c.SourceUntil.Sub(cp.Until))
				}
			}
		}
		if c.Audit != nil {
			a := make(map[string]int, len(c.Audit))
			for k, v := range c.Audit {
				a[k] = v
			}
			c.Audit = a
		}
		s.Sets = append(s.Sets, c)
	}
	cur := now.Unix() / 60
	s.Throughput = make([]Minute, Minutes)
	for i := range Minutes {
		m := cur - int64(Minutes-1-i)
		s.Throughput[i].Start = time.Unix(m*60, 0).UTC()
		if k := r.buckets[((m%Minutes)+Minutes)%Minutes]; k.minute == m {
			s.Throughput[i].Files, s.Throughput[i].Bytes = k.files, k.bytes
		}
	}
	return s
}

// ring keeps the last n values added.
type ring[T any] struct {
	buf  []T
	next int // where the next value goes
	full bool
}

func newRing[T any](n int) ring[T] { return ring[T]{buf: make([]T, n)} }

func (g *ring[T]) add(v T) {
	g.buf[g.next] = v
	g.next++
	if g.next == len(g.buf) {
		g.next, g.full = 0, true
	}
}

func (g *ring[T]) newestFirst() []T {
	n := g.next
	if g.full {
		n = len(g.buf)
	}
	out := make([]T, 0, n)
	for i := range n {
		out = append(out, g.buf[(g.next-1-i+len(g.buf))%len(g.buf)])
	}
	return out
}

// MaxText bounds each text kept of an event (a URL, a path, an error
// message): a Source's <loc> may be a megabyte long, and the rings hold
// 100 of them, rendered into every page (every 5 s) and the report.
const MaxText = 2048

// clip cuts s to MaxText bytes (at a character boundary), copying: the
// event's long string is not kept alive.
func clip(s string) string {
	if len(s) <= MaxText {
		return s
	}
	cut := MaxText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

var userinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s]*@`)

// Redact removes user information (user:password@) and the values of
// secret query parameters (token=, api_key=, sig=: internal/redact) from
// a URL.
func Redact(raw string) string {
	if !strings.Contains(raw, "@") {
		return redact.String(raw) // the common case, without parsing
	}
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return RedactText(raw)
	}
	u.User = nil
	return redact.String(u.String())
}

// RedactText removes user information from every URL in a text (an
// error message), and the other secrets internal/redact recognizes.
func RedactText(s string) string {
	if strings.Contains(s, "@") {
		s = userinfo.ReplaceAllString(s, "$1")
	}
	return redact.String(s)
}
