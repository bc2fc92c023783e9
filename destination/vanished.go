package destination

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/rs"
)

// A run reads the Source's lists, then fetches what they name; a Source
// that keeps changing meanwhile (a file rewritten or deleted after the
// list was written) answers 404 or other bytes for some of them. Those
// are not failures of the mirror: the Source's later state says what the
// resource is now. They are set aside during the pass (suspects), and
// settle asks the Source what it says now: the Change Lists since the
// point the run had read (cheap: the open list and what follows it), or,
// for a Source without Change Lists, the Resource List again. A newer
// version is fetched, a resource the Source now lists as deleted (or no
// longer lists) is deleted, both are reported as vanished; what the
// Source's later state does not explain (a 404 for a resource it still
// lists unchanged, other bytes that persist) fails as before.

// maxSuspects bounds the resources one run sets aside: beyond, they fail
// at once (the next run judges them against the lists it reads), so that
// memory does not grow with a Source that changes everything during a run.
const maxSuspects = 10000

// settleRounds is how many more times the Source's later state is read
// while some suspects are unexplained: a Source publishes a change some
// time after its file changed (serve --watch: at the next rescan), and
// serves the new file (or 404) before. The waits are the fetch backoff's
// (Options.BaseDelay doubled up to MaxDelay, jittered): about 3 s in all
// with the defaults.
const settleRounds = 5

type suspect struct {
	uri, rel string
	e        rs.Entry // what the run tried to fetch
	err      error
}

type suspects struct {
	mu   sync.Mutex
	list []suspect
}

// watchVanished makes the pass set aside the downloads that a change at
// the Source would explain, into s, for settle.
func (p *pass) watchVanished(s *suspects) *pass {
	p.suspects = s
	return p
}

// vanishable reports whether a failed download is what a change at the
// Source after its list was read looks like: gone (404, 410) or other
// bytes (length or digest mismatch, after the fetch's retries).
func vanishable(err error) bool {
	var se *fetch.StatusError
	if errors.As(err, &se) {
		return se.Code == http.StatusNotFound || se.Code == http.StatusGone
	}
	return errors.Is(err, fetch.ErrHashMismatch) || errors.Is(err, fetch.ErrLengthMismatch)
}

// suspect sets j aside when the pass watches for vanished resources and
// err is vanishable; false: j fails as usual.
func (p *pass) suspect(j job, err error) bool {
	if p.suspects == nil || !vanishable(err) {
		return false
	}
	p.suspects.mu.Lock()
	defer p.suspects.mu.Unlock()
	if len(p.suspects.list) >= maxSuspects {
		return false
	}
	p.suspects.list = append(p.suspects.list, suspect{uri: j.uri, rel: j.rel, e: j.e, err: err})
	return true
}

func (s *suspects) take() []suspect {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.list
	s.list = nil
	return l
}

// errUnexplained: suspects that the Source's later state does not explain
// (yet); settle reads it again after a wait.
var errUnexplained = errors.New("the Source's later state does not explain the failures")

// settle judges the suspects of a set's passes against the Source's later
// state (see above). since is how far the Change Lists the run applied
// reached; p is the set's finished pass, through which what stays
// unexplained fails (and holds the checkpoint, as a failure does) and
// whose refuse (--max-delete) the deletions follow. Errors are the
// state's and the context's; a Source that cannot be read now leaves the
// suspects failed.
func (e *engine) settle(ctx context.Context, s setInfo, p *pass, sus *suspects, since time.Time) error {
	left := sus.take()
	if len(left) == 0 {
		return nil
	}
	// What fails in the end holds the checkpoint where the earliest
	// change the run read to them would have: not at the later changes
	// settle read, which the run did not apply in full.
	var hold rs.Time
	for _, su := range left {
		if t := holdTime(&su.e); hold.IsZero() || t.Before(hold) {
			hold = t
		}
	}
	e.phase(s.Name, "%d resources changed or went away at the Source while this run read them: reading what the Source says now", len(left))
	pol := retry.Policy{Retries: settleRounds, BaseDelay: e.opt.BaseDelay, MaxDelay: e.opt.MaxDelay}
	var stateErr error
	_, err := retry.Do(ctx, pol, func() (bool, error) {
		now, err := e.sourceNow(ctx, s, since, left)
		if err != nil {
			if errors.Is(err, ErrState) {
				stateErr = err
			}
			e.phase(s.Name, "cannot read what the Source says now: %v", err)
			return false, err
		}
		next := &suspects{}
		q := e.newPass(ctx, s.Name, p.sr).watchVanished(next)
		q.refuse = p.refuse
		var unexplained []suspect
		var ferr error
		for _, su := range left {
			c, ok := now[su.uri]
			if !ok || c.MD.Change != rs.Deleted && sameEntry(c, &su.e) {
				unexplained = append(unexplained, su)
				continue
			}
			q.count(func(sr *SetReport) { sr.Vanished++ })
			ev := Event{Kind: EventVanished, Set: s.Name, URI: su.uri, Path: su.rel, Change: string(c.MD.Change), DateTime: knownTime(changeTime(c))}
			if c.MD.Change == rs.Deleted {
				ev.Message = "deleted at the Source while this run read its lists (" + su.err.Error() + ")"
				e.emit(ev)
				ferr = q.deleteURI(c)
			} else {
				ev.Change = string(rs.Updated)
				ev.Message = "changed at the Source while this run read its lists (" + su.err.Error() + "): fetching its newer version"
				e.emit(ev)
				ferr = q.planSync(c, false)
			}
			if ferr != nil {
				break
			}
		}
		if err := q.finish(); ferr == nil {
			ferr = err
		}
		if !q.failedAt.IsZero() {
			// A newer version that failed, or a deletion held back by
			// --max-delete.
			p.holdAt(hold)
		}
		if ferr != nil {
			stateErr = ferr
			return false, ferr
		}
		left = append(unexplained, next.take()...)
		if len(left) > 0 {
			return true, errUnexplained
		}
		return false, nil
	}, nil)
	if stateErr != nil {
		return stateErr
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	_ = err // errUnexplained, or a Source that cannot be read now: the rest fails
	for _, su := range left {
		p.fail(su.uri, su.rel, hold, su.err)
	}
	return nil
}

// sameEntry reports whether two entries describe the same bytes.
func sameEntry(a, b *rs.Entry) bool {
	return a.MD.HasLength == b.MD.HasLength && a.MD.Length == b.MD.Length &&
		a.MD.Hashes.String() == b.MD.Hashes.String() && a.LastMod.Time().Equal(b.LastMod.Time())
}

// sourceNow returns what the Source says now of the suspects' URIs: the
// last change since since when the set has Change Lists that reach back
// to it, else its entry in the current Resource List (a deletion when the
// list no longer names it). A URI the Source says nothing new about is
// absent.
func (e *engine) sourceNow(ctx context.Context, s setInfo, since time.Time, sus []suspect) (map[string]*rs.Entry, error) {
	now := make(map[string]*rs.Entry, len(sus))
	if (s.ChangeList != "" || s.Feed != "") && !since.IsZero() {
		cs, err := e.changesSince(ctx, s, since, nil)
		if err == nil {
			defer cs.close()
			if _, feed := cs.changeStore.(*feedSpool); feed && cs.gap == "" {
				// A feed's spool has no lookups: one pass over it.
				want := make(map[string]bool, len(sus))
				for _, su := range sus {
					want[su.uri] = true
				}
				if err := cs.each(func(en *rs.Entry) error {
					if want[en.Loc] {
						now[en.Loc] = en
					}
					return nil
				}); err != nil {
					return nil, err
				}
				return now, nil
			}
			if cs.gap == "" {
				for _, su := range sus {
					c, err := cs.get(su.uri)
					if err != nil {
						return nil, fmt.Errorf("%w: %v", ErrState, err)
					}
					if c != nil {
						now[su.uri] = c
					}
				}
				return now, nil
			}
		} else if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Unreadable or no longer reaching back: the Resource List, if
		// it is as recent.
	}
	if s.ResourceList == "" {
		return now, nil
	}
	d, err := e.open(ctx, s.ResourceList)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	at := d.Head.MD.At.Time()
	// A list older than what the run applied says nothing of later
	// changes: only an entry that differs counts then, not an absence.
	fresh := s.ChangeList == "" || since.IsZero() || !at.IsZero() && !at.Before(since)
	want := make(map[string]bool, len(sus))
	for _, su := range sus {
		want[su.uri] = true
	}
	err = e.eachEntry(ctx, d, 0, func(en *rs.Entry) error {
		if want[en.Loc] {
			c := *en
			now[en.Loc] = &c
			delete(want, en.Loc)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if fresh {
		for uri := range want {
			now[uri] = &rs.Entry{Loc: uri, MD: rs.Metadata{Change: rs.Deleted}}
		}
	}
	return now, nil
}
