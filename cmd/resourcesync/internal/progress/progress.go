package progress

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/resourcesync-go/resourcesync/destination"
)

// Mode selects how a Renderer writes.
type Mode int

const (
	Auto  Mode = iota // Bars on a terminal, Lines otherwise
	Bars              // one status line redrawn in place, notable events above it
	Lines             // line-oriented log: notable events and a progress line every few seconds
	JSON              // one JSON object per event per line
	Quiet             // failures only
)

var modeNames = [...]string{"auto", "bars", "lines", "json", "quiet"}

func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// ParseMode returns the Mode named s ("auto", "bars", "lines", "json" or
// "quiet"), as given to a command-line flag.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if strings.EqualFold(s, n) {
			return Mode(i), nil
		}
	}
	return Auto, fmt.Errorf("unknown progress mode %q (want auto, bars, lines, json or quiet)", s)
}

// Counts totals the events a Renderer has handled.
type Counts struct {
	Fetched int64
	Skipped int64
	Deleted int64
	Kept    int64
	Failed  int64
	Retries int64
	Bytes   int64            // bytes fetched
	Audit   map[string]int64 // audit results by status; nil when there were none
}

const (
	barInterval   = time.Second / 8 // redraw rate of the status line
	flushInterval = time.Second / 4 // Lines and JSON: how long output may wait in memory
	linesEvery    = 5 * time.Second // Lines: the least time between progress lines
	rateWindow    = 5 * time.Second // rates are averaged over this much recent time
	maxPending    = 64 << 10        // beyond this, Handle writes itself instead of waiting for the ticker
	maxNotes      = 100             // deletions, kept files and audit findings listed, each
	defaultWidth  = 80
)

// auditStatuses have their own counters so that an audit of many files
// stays on the lock-free path; other statuses go to a map under the lock.
var auditStatuses = [...]string{
	destination.AuditInSync,
	destination.AuditMissing,
	destination.AuditChanged,
	destination.AuditExtra,
	destination.AuditUnverifiable,
}

// Kinds of listed-but-limited lines, indexing Renderer.notes.
const (
	noteDeleted = iota
	noteKept
	noteAudit
	nNotes
)

type sample struct {
	t        time.Time
	n, bytes int64
}

// A Renderer renders destination Events to a writer. Its methods are safe
// for concurrent use.
type Renderer struct {
	w     io.Writer
	mode  Mode
	now   func() time.Time
	width func() int

	// Counters are atomic so that the frequent events never take the lock.
	fetched, skipped, deleted, kept, failed, retries, bytes atomic.Int64
	audit                                                   [len(auditStatuses)]atomic.Int64

	mu         sync.Mutex
	closed     bool
	broken     bool          // a write failed; further output is dropped
	bw         *bufio.Writer // JSON
	pending    []byte        // Bars and Lines: complete lines not yet written
	auditOther map[string]int64
	notes      [nNotes]int64

	// The set being planned or run, from its latest plan event.
	active            bool // between plan and done
	set, setMode      string
	total, totalBytes int64 // -1 when unknown
	base              int64 // resources handled before the plan
	samples           []sample
	shown             bool   // Bars: the status line is on screen
	lastBar           string // Bars: what it shows
	lastLine          time.Time
	lastLineN         int64 // Lines: resources handled at the last progress line

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// New returns a Renderer writing to w in the given mode and starts its
// ticker. Auto means Bars if w is an *os.File on a terminal (other than
// TERM=dumb) and Lines otherwise. The caller must Close the Renderer to
// write what is pending.
func New(w io.Writer, mode Mode) *Renderer {
	width := func() int { return defaultWidth }
	tty := false
	if f, ok := w.(*os.File); ok {
		fd := int(f.Fd())
		if term.IsTerminal(fd) {
			tty = true
			width = func() int {
				if c, _, err := term.GetSize(fd); err == nil && c > 0 {
					return c
				}
				return defaultWidth
			}
		}
	}
	if mode == Auto {
		mode = Lines
		if tty && os.Getenv("TERM") != "dumb" {
			mode = Bars
		}
	}
	r := newRenderer(w, mode, time.Now, width)
	switch mode {
	case Bars:
		r.start(barInterval)
	case Lines, JSON:
		r.start(flushInterval)
	}
	return r
}

// newRenderer returns a Renderer without a ticker; tests drive tick by hand.
func newRenderer(w io.Writer, mode Mode, now func() time.Time, width func() int) *Renderer {
	r := &Renderer{w: w, mode: mode, now: now, width: width, total: -1, totalBytes: -1}
	if mode == JSON {
		r.bw = bufio.NewWriterSize(w, 64<<10)
	}
	return r
}

func (r *Renderer) start(d time.Duration) {
	r.stop = make(chan struct{})
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				r.tick()
			}
		}
	}()
}

// Handle renders e. Events handled after Close are counted but not written.
func (r *Renderer) Handle(e destination.Event) {
	switch e.Kind {
	case destination.EventFetched:
		r.fetched.Add(1)
		r.bytes.Add(e.Bytes)
	case destination.EventSkipped:
		r.skipped.Add(1)
	case destination.EventDeleted:
		r.deleted.Add(1)
	case destination.EventKept:
		r.kept.Add(1)
	case destination.EventFailed:
		r.failed.Add(1)
	case destination.EventRetry:
		r.retries.Add(1)
	case destination.EventAudit:
		r.countAudit(e.Status)
	}
	switch r.mode {
	case JSON:
		r.writeJSON(e)
	case Quiet:
		if e.Kind == destination.EventFailed {
			r.mu.Lock()
			if !r.closed {
				r.write([]byte(lineFor(e)))
			}
			r.mu.Unlock()
		}
	default:
		r.note(e)
	}
}

func (r *Renderer) countAudit(status string) {
	for i, s := range auditStatuses {
		if s == status {
			r.audit[i].Add(1)
			return
		}
	}
	r.mu.Lock()
	if r.auditOther == nil {
		r.auditOther = make(map[string]int64)
	}
	r.auditOther[status]++
	r.mu.Unlock()
}

// auditFinding reports whether an audit result is worth a line of its own:
// in-sync is the norm, and unverifiable may be every file of a Source that
// gives neither hashes nor lengths.
func auditFinding(status string) bool {
	return status != destination.AuditInSync && status != destination.AuditUnverifiable
}

func (r *Renderer) writeJSON(e destination.Event) {
	b, err := json.Marshal(e) // outside the lock: encoding is the costly part
	if err != nil {
		return
	}
	b = append(b, '\n')
	r.mu.Lock()
	if !r.closed && !r.broken {
		if _, err := r.bw.Write(b); err != nil {
			r.broken = true
		}
	}
	r.mu.Unlock()
}

// note records what Bars and Lines show of e: lines above the status line
// and the state of the current set.
func (r *Renderer) note(e destination.Event) {
	note := -1
	switch e.Kind {
	case destination.EventFetched, destination.EventSkipped, destination.EventRetry:
		return // counted only
	case destination.EventTotal:
		r.mu.Lock()
		if r.active && e.Set == r.set && e.Total > 0 {
			r.total = e.Total // an estimate; what is done so far stays
		}
		r.mu.Unlock()
		return
	case destination.EventAudit:
		if !auditFinding(e.Status) {
			return
		}
		note = noteAudit
	case destination.EventDeleted:
		note = noteDeleted
	case destination.EventKept:
		note = noteKept
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	switch e.Kind {
	case destination.EventPlan:
		r.active = true
		r.set, r.setMode = e.Set, e.Mode
		r.total, r.totalBytes = e.Total, e.TotalBytes
		r.base = r.handledLocked()
		r.lastLine, r.lastLineN = r.now(), r.base
	case destination.EventDone:
		// The set's summary is the command's to print (once, on its
		// report); here the set only ends, which clears the status line.
		r.active = false
		return
	}
	if note >= 0 {
		r.notes[note]++
		if n := r.notes[note]; n > maxNotes {
			if n == maxNotes+1 {
				r.pending = append(r.pending, notesElided(e)...)
			}
			return
		}
	}
	r.pending = append(r.pending, lineFor(e)...)
	if len(r.pending) > maxPending {
		r.flushLocked()
	}
}

// handledLocked counts the resources handled, the measure of progress
// against a plan's total.
func (r *Renderer) handledLocked() int64 {
	n := r.fetched.Load() + r.skipped.Load() + r.deleted.Load() + r.kept.Load() + r.failed.Load()
	for i := range r.audit {
		n += r.audit[i].Load()
	}
	for _, c := range r.auditOther {
		n += c
	}
	return n
}

// tick is the ticker's work: sample the rates, write pending lines, redraw
// the status line or add a progress line.
func (r *Renderer) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	now := r.now()
	switch r.mode {
	case Bars, Lines:
		r.sampleLocked(now)
		if r.mode == Lines && r.active && now.Sub(r.lastLine) >= linesEvery {
			r.progressLineLocked(now)
		}
		r.flushLocked()
	case JSON:
		if r.bw.Buffered() > 0 && !r.broken {
			if err := r.bw.Flush(); err != nil {
				r.broken = true
			}
		}
	}
}

// progressLineLocked adds a Lines progress line if anything moved since
// the last one.
func (r *Renderer) progressLineLocked(now time.Time) {
	n := r.handledLocked()
	if n == r.lastLineN {
		return
	}
	r.lastLine, r.lastLineN = now, n
	var b strings.Builder
	b.WriteString(prefix(r.set))
	b.WriteString(group(n - r.base))
	if r.total >= 0 {
		b.WriteString("/" + group(r.total))
	}
	b.WriteString(" resources, " + formatBytes(r.bytes.Load()))
	if files, _, ok := r.rateLocked(); ok {
		b.WriteString(", " + formatRate(files))
	}
	if f := r.failed.Load(); f > 0 {
		b.WriteString(", " + group(f) + " failed")
	}
	if t := r.retries.Load(); t > 0 {
		b.WriteString(", " + plural(t, "retry", "retries"))
	}
	b.WriteByte('\n')
	r.pending = append(r.pending, b.String()...)
}

// flushLocked writes the pending lines and, in Bars mode, brings the status
// line up to date, all in one write so that the terminal does not flicker.
func (r *Renderer) flushLocked() {
	if r.mode != Bars {
		r.write(r.pending)
		r.pending = r.pending[:0]
		return
	}
	var b []byte
	if len(r.pending) > 0 {
		if r.shown {
			b = append(b, "\r\x1b[K"...)
			r.shown = false
		}
		b = append(b, r.pending...)
		r.pending = r.pending[:0]
	}
	if r.active {
		if s := r.statusLocked(r.width()); !r.shown || s != r.lastBar {
			b = append(b, '\r')
			b = append(b, s...)
			b = append(b, "\x1b[K"...)
			r.shown, r.lastBar = true, s
		}
	} else if r.shown {
		b = append(b, "\r\x1b[K"...)
		r.shown = false
	}
	r.write(b)
}

func (r *Renderer) write(b []byte) {
	if len(b) == 0 || r.broken {
		return
	}
	if _, err := r.w.Write(b); err != nil {
		r.broken = true // progress is not worth failing for, nor retrying
	}
}

func (r *Renderer) sampleLocked(now time.Time) {
	r.samples = append(r.samples, sample{now, r.handledLocked(), r.bytes.Load()})
	// Keep the newest sample at least a window old as the anchor.
	i := 0
	for i < len(r.samples)-1 && now.Sub(r.samples[i+1].t) >= rateWindow {
		i++
	}
	if i > 0 {
		r.samples = append(r.samples[:0], r.samples[i:]...)
	}
}

// rateLocked returns resources and bytes per second over the recent
// window; ok is false until there is a second's worth of samples.
func (r *Renderer) rateLocked() (files, bytes float64, ok bool) {
	if len(r.samples) < 2 {
		return 0, 0, false
	}
	first, last := r.samples[0], r.samples[len(r.samples)-1]
	dt := last.t.Sub(first.t).Seconds()
	if dt < 1 {
		return 0, 0, false
	}
	return float64(last.n-first.n) / dt, float64(last.bytes-first.bytes) / dt, true
}

// Close writes what is pending and stops the ticker. A status line still
// showing (the run ended without a done event) is left on screen. Close
// may be called more than once.
func (r *Renderer) Close() {
	r.closeOnce.Do(func() {
		if r.stop != nil {
			close(r.stop)
			<-r.done
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		now := r.now()
		switch r.mode {
		case Bars:
			r.sampleLocked(now)
			r.flushLocked()
			if r.shown {
				r.write([]byte("\n"))
				r.shown = false
			}
		case Lines:
			r.sampleLocked(now)
			if r.active {
				r.progressLineLocked(now)
			}
			r.flushLocked()
		case JSON:
			if !r.broken {
				r.bw.Flush()
			}
		}
		r.closed = true
	})
}

// Counts returns the totals so far.
func (r *Renderer) Counts() Counts {
	c := Counts{
		Fetched: r.fetched.Load(),
		Skipped: r.skipped.Load(),
		Deleted: r.deleted.Load(),
		Kept:    r.kept.Load(),
		Failed:  r.failed.Load(),
		Retries: r.retries.Load(),
		Bytes:   r.bytes.Load(),
	}
	add := func(status string, n int64) {
		if n > 0 {
			if c.Audit == nil {
				c.Audit = make(map[string]int64)
			}
			c.Audit[status] += n
		}
	}
	for i, s := range auditStatuses {
		add(s, r.audit[i].Load())
	}
	r.mu.Lock()
	for s, n := range r.auditOther {
		add(s, n)
	}
	r.mu.Unlock()
	return c
}
