package destination

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/discover"
	"github.com/resourcesync-go/resourcesync/destination/feedsync"
	"github.com/resourcesync-go/resourcesync/rs"
)

// ErrFeed wraps a change feed that could not be read to the end (a page
// unreadable, malformed, looping, or beyond the limits).
var ErrFeed = errors.New("change feed unreadable")

// feed brings a set whose SOURCE is a change feed up to date: the changes
// since the checkpoint, read newest first from the feed
// (destination/feedsync), applied oldest first as a Change List's are,
// the checkpoint moving to the newest change read. There is no baseline:
// a first run reads the feed from its start (or from its newest Refresh).
func (e *engine) feed(ctx context.Context, s setInfo, cp *Checkpoint, sr *SetReport) error {
	if e.opt.Mode == ModeAudit {
		return fmt.Errorf("%w: an audit needs a Resource List; %s is a change feed", ErrFeed, s.Feed)
	}
	from := cp.Until
	if e.opt.Mode == ModeBaseline {
		from = time.Time{}
	}
	if from.IsZero() {
		e.phase(s.Name, "every change from the feed %s", s.Feed)
	} else {
		e.phase(s.Name, "changes since %s from the feed %s", fmtTime(from), s.Feed)
	}
	var resume []string
	if !from.IsZero() {
		resume = cp.Resume
	}
	cs, err := e.changesSince(ctx, s, from, resume)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	defer cs.close()
	cp.Baseline = true
	if err := e.apply(ctx, s, cp, sr, cs, "feed"); err != nil {
		return err
	}
	if cp.Until.Equal(cs.until) {
		// Everything read is applied: the next run may start from the
		// nodes that can still change. Else the nodes of what failed
		// must be read again.
		cp.Resume = cs.resume
	}
	return nil
}

// changesSince collects the changes at or after from: a feed's, else the
// Change Lists'.
func (e *engine) changesSince(ctx context.Context, s setInfo, from time.Time, resume []string) (_ *changeSet, err error) {
	if s.Feed == "" {
		return e.collectChanges(ctx, s, from)
	}
	cs := e.newChangeSet(from)
	cs.changeStore = newFeedSpool(e.scratch) // read newest first
	defer func() {
		if err == nil {
			err = cs.flush()
		}
		if err != nil {
			cs.close()
		}
	}()
	g := e.g
	walk := feedsync.Walk
	if s.FeedKind == discover.FeedLDES {
		lg := *e.g
		lg.Accept = feedsync.AcceptLDES
		g, walk = &lg, feedsync.WalkLDES
	}
	get := func(ctx context.Context, u string) (feedsync.Fetched, error) {
		e.docs.add(u)
		r, err := g.Get(ctx, u)
		if err != nil {
			return feedsync.Fetched{}, err
		}
		e.docs.add(r.URL)
		return feedsync.Fetched{ReadCloser: r, URL: r.URL, Header: r.Header}, nil
	}
	opt := feedsync.Options{Since: from, Now: e.opt.Now, Resume: resume, Warn: func(msg string) {
		e.emit(Event{Kind: EventWarning, Set: s.Name, URI: s.Feed, Message: msg})
	}}
	var stateErr error
	// The walk gives again the changes dated from itself (a feed dates to
	// the second; one of that second may be new). Those the state shows
	// applied are passed over (the same time, and the same digest when
	// the feed gives one), else every idle run would fetch them again; an
	// object changed twice in one second without a digest is the case
	// this cannot tell. boundary remembers the objects so passed, so that an older
	// change of the same second is not taken for theirs.
	boundary := map[string]bool{}
	res, err := walk(ctx, get, s.Feed, opt, func(c feedsync.Change) error {
		en := c.Entry()
		en.Loc = e.m.Key(en.Loc)
		if !from.IsZero() && c.Time.Equal(from) {
			if boundary[en.Loc] {
				return nil
			}
			if len(boundary) < maxFeedBoundary {
				rec, ok, err := e.st.get(en.Loc)
				if err != nil {
					stateErr = fmt.Errorf("%w: %v", ErrState, err)
					return stateErr
				}
				if (c.Change == rs.Deleted && !ok) || (c.Change != rs.Deleted && ok && rec.Changed.Equal(c.Time) && (c.Hashes == nil || c.Hashes.String() == rec.RemoteHash)) {
					boundary[en.Loc] = true
					return nil
				}
			}
		}
		if err := cs.add(en); err != nil {
			stateErr = fmt.Errorf("%w: %v", ErrState, err)
			return stateErr
		}
		return nil
	})
	switch {
	case stateErr != nil:
		return nil, stateErr
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrFeed, err)
	}
	cs.lists = res.Pages
	cs.until = res.Until
	cs.resume = res.Frontier
	if !res.Refresh.IsZero() && !from.IsZero() {
		e.phase(s.Name, "the feed was refreshed at %s: its objects since then are read again, and only deletions before it", fmtTime(res.Refresh))
	}
	return cs, nil
}

// maxFeedBoundary bounds the objects of one second a feed run passes over
// as applied already; beyond it they are applied again (correct, only
// slower), so that a feed dating everything alike cannot grow memory.
const maxFeedBoundary = 10000
