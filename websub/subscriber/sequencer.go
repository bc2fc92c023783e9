package subscriber

import (
	"slices"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

// StepKind says what the caller should do with a Step.
type StepKind uint8

const (
	// Apply: the notification continues the sequence (its from is the
	// previous until, or it is the first one); apply its entries.
	Apply StepKind = iota
	// ApplyOverlap: it starts before the previous until but ends after it;
	// apply it (re-applying the already covered part is harmless).
	ApplyOverlap
	// Duplicate: its interval is already covered; ignore it.
	Duplicate
	// Held: it starts after the previous until; it is held back, waiting
	// for the missing one, and will come out of a later Add or Flush.
	Held
	// Gap: the interval [From, Until) was never notified and waiting is
	// over; catch up from the Change Lists before the Steps that follow.
	Gap
)

func (k StepKind) String() string {
	switch k {
	case Apply:
		return "apply"
	case ApplyOverlap:
		return "apply-overlap"
	case Duplicate:
		return "duplicate"
	case Held:
		return "held"
	case Gap:
		return "gap"
	}
	return "?"
}

// Step is one instruction of a Sequencer.
type Step[T any] struct {
	Kind        StepKind
	From, Until rs.Time
	Value       T // the notification; zero for a Gap
}

type held[T any] struct {
	from, until rs.Time
	v           T
	since       time.Time
}

// Sequencer orders notifications by their [from, until] intervals, which
// consecutive notifications of a channel make contiguous (RS-CN-2). It is
// pure logic: it neither reads the clock nor starts goroutines, so the
// caller passes now. Not safe for concurrent use.
//
// A notification that starts after the position is held for up to Wait,
// or until MaxHeld are held; then the Sequencer gives up on the missing
// interval, reports it as a Gap and releases what it held, in order.
type Sequencer[T any] struct {
	Wait    time.Duration // how long to hold an early notification; default 30 s
	MaxHeld int           // how many may be held; default 64

	pos  rs.Time // until of the last applied notification; zero before the first
	held []held[T]
}

// Position returns the until of the last applied notification (zero
// before the first one, unless set with Reset).
func (s *Sequencer[T]) Position() rs.Time { return s.pos }

// Reset sets the position, e.g. to the until of the Change Lists the
// caller has just caught up from; held notifications stay held.
func (s *Sequencer[T]) Reset(pos rs.Time) { s.pos = pos }

// Held returns how many notifications are held.
func (s *Sequencer[T]) Held() int { return len(s.held) }

func (s *Sequencer[T]) wait() time.Duration {
	if s.Wait <= 0 {
		return 30 * time.Second
	}
	return s.Wait
}

func (s *Sequencer[T]) maxHeld() int {
	if s.MaxHeld <= 0 {
		return 64
	}
	return s.MaxHeld
}

// Add takes one notification's interval and returns what to do, in order.
func (s *Sequencer[T]) Add(from, until rs.Time, v T, now time.Time) []Step[T] {
	var out []Step[T]
	switch {
	case s.pos.IsZero():
		out = append(out, Step[T]{Kind: Apply, From: from, Until: until, Value: v})
		s.pos = until
	case !until.After(s.pos):
		out = append(out, Step[T]{Kind: Duplicate, From: from, Until: until, Value: v})
	case from.Before(s.pos):
		out = append(out, Step[T]{Kind: ApplyOverlap, From: from, Until: until, Value: v})
		s.pos = until
	case from.Equal(s.pos):
		out = append(out, Step[T]{Kind: Apply, From: from, Until: until, Value: v})
		s.pos = until
	default:
		s.held = append(s.held, held[T]{from: from, until: until, v: v, since: now})
		slices.SortStableFunc(s.held, func(a, b held[T]) int { return a.from.Compare(b.from) })
		out = append(out, Step[T]{Kind: Held, From: from, Until: until, Value: v})
	}
	out = s.release(out)
	return s.expire(out, now)
}

// Flush gives up waiting for missing intervals older than Wait (call it
// now and then, e.g. every few seconds, while Held() > 0).
func (s *Sequencer[T]) Flush(now time.Time) []Step[T] { return s.expire(nil, now) }

// FlushAll gives up on every missing interval and releases everything held.
func (s *Sequencer[T]) FlushAll() []Step[T] {
	var out []Step[T]
	for len(s.held) > 0 {
		out = s.gapTo(out)
		out = s.release(out)
	}
	return out
}

// release emits held notifications that the position has reached.
func (s *Sequencer[T]) release(out []Step[T]) []Step[T] {
	for len(s.held) > 0 && !s.held[0].from.After(s.pos) {
		h := s.held[0]
		s.held = s.held[1:]
		switch {
		case !h.until.After(s.pos):
			out = append(out, Step[T]{Kind: Duplicate, From: h.from, Until: h.until, Value: h.v})
		case h.from.Before(s.pos):
			out = append(out, Step[T]{Kind: ApplyOverlap, From: h.from, Until: h.until, Value: h.v})
			s.pos = h.until
		default:
			out = append(out, Step[T]{Kind: Apply, From: h.from, Until: h.until, Value: h.v})
			s.pos = h.until
		}
	}
	if len(s.held) == 0 {
		s.held = nil
	}
	return out
}

// expire declares gaps while the oldest held notification waited too long
// or too many are held.
func (s *Sequencer[T]) expire(out []Step[T], now time.Time) []Step[T] {
	for len(s.held) > 0 && (len(s.held) > s.maxHeld() || s.oldest(now) >= s.wait()) {
		out = s.gapTo(out)
		out = s.release(out)
	}
	return out
}

func (s *Sequencer[T]) oldest(now time.Time) time.Duration {
	var o time.Time
	for i, h := range s.held {
		if i == 0 || h.since.Before(o) {
			o = h.since
		}
	}
	return now.Sub(o)
}

// gapTo reports the gap up to the first held notification and moves the
// position there.
func (s *Sequencer[T]) gapTo(out []Step[T]) []Step[T] {
	from := s.held[0].from
	out = append(out, Step[T]{Kind: Gap, From: s.pos, Until: from})
	s.pos = from
	return out
}
