package destination

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/redact"
	"github.com/resourcesync-go/resourcesync/rs"
)

// ErrNotContiguous is returned by Apply when a notification does not
// continue from the set's checkpoint: changes between them are unknown
// here, and the caller catches up from the Change Lists (Sync).
var ErrNotContiguous = errors.New("notification does not continue from the checkpoint")

// Apply applies the changes of one change notification (a
// capability="change-notification" payload) to set, through the same
// planner and fetcher as a pull sync. A notification that ends at or
// before the checkpoint was applied already and is ignored (duplicates and
// late arrivals are harmless); one that starts after the checkpoint wraps
// ErrNotContiguous and applies nothing. The checkpoint advances to the
// notification's until when every change is durable.
func (m *Mirror) Apply(ctx context.Context, set string, head *rs.Head, entries []*rs.Entry) (_ *SetReport, rerr error) {
	defer func() { rerr = redact.Error(rerr) }()
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.e
	if e.st.readOnly {
		return nil, fmt.Errorf("%w: opened read-only", ErrState)
	}
	if head.Capability() != rs.CapChangeNotification {
		return nil, fmt.Errorf("capability %q is not change-notification", head.Capability())
	}
	from, until := head.MD.From.Time(), head.MD.Until.Time()
	if head.MD.From.IsZero() || head.MD.Until.IsZero() {
		return nil, errors.New("change notification without from and until (RS-CN-1)")
	}
	cp, err := e.st.checkpoint(set)
	if err != nil {
		return nil, err
	}
	sr := &SetReport{Set: set, Mode: "notification", Checkpoint: cp}
	switch {
	case !cp.Baseline:
		return sr, fmt.Errorf("%w: set %s has no baseline yet", ErrNotContiguous, set)
	case !until.After(cp.Until):
		sr.Skipped = len(entries)
		return sr, nil // applied already
	case from.After(cp.Until):
		return sr, fmt.Errorf("%w: the set is synchronized up to %s, the notification starts at %s", ErrNotContiguous, fmtTime(cp.Until), fmtTime(from))
	}
	start := time.Now()
	if err := m.mark(nil); err != nil {
		return nil, err
	}
	last := map[string]*rs.Entry{}
	var order []string
	for _, en := range entries {
		en.Loc = e.m.Key(en.Loc)
		if t := changeTime(en); !t.IsZero() && t.Time().Before(cp.Until) {
			continue
		}
		t := en.EventTime()
		if old := last[en.Loc]; old == nil {
			order = append(order, en.Loc)
		} else if old.EventTime().After(t) {
			continue
		}
		last[en.Loc] = en
	}
	planned := 0
	for _, uri := range order {
		if err := e.countDeletes(last[uri], &planned); err != nil {
			return sr, err
		}
	}
	allowed, err := e.deletesAllowed(set, planned, -1, &cp, sr)
	if err != nil {
		return sr, err
	}
	p := e.newPass(ctx, set, sr)
	p.refuse = !allowed
	// A notified resource whose bytes no longer match was most likely
	// changed again, and the next notification says so: retry once,
	// quickly, then leave it to the catch-up from the Change Lists rather
	// than hold back the notifications queued behind this one.
	p.fetcher = e.fn
	p.fsyncEach = true
	for _, uri := range order {
		en := last[uri]
		if en.MD.Change == rs.Deleted {
			err = p.deleteURI(en)
		} else {
			err = p.planSync(en, false)
		}
		if err != nil {
			break
		}
	}
	if ferr := p.finish(); err == nil {
		err = ferr
	}
	e.noteDeleted(set, sr.Deleted)
	if err != nil {
		return sr, err
	}
	if p.failedAt.IsZero() {
		cp.Until = until
	} else if t := heldAt(p.failedAt); t.After(cp.Until) {
		cp.Until = t
	}
	cp.LastRun = e.opt.Now().UTC()
	sr.Checkpoint = cp
	sr.Seconds = time.Since(start).Seconds()
	if err := e.st.putCheckpoint(cp); err != nil {
		return sr, fmt.Errorf("%w: %v", ErrState, err)
	}
	sr.SourceUntil = until
	e.emit(Event{Kind: EventDone, Set: set, Mode: sr.Mode, Message: sr.Summary(false), Checkpoint: &cp, SourceUntil: until})
	return sr, nil
}
