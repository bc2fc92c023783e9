package destination

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

// DeleteLimit caps how many files one run deletes in one set
// (Options.MaxDelete), as rsync's and rclone's --max-delete do: a Source
// that lost its files (an unmounted or emptied directory, a broken
// export) must not make its mirrors delete everything. The zero value is
// the default: at most half of a set of more than 100 files.
type DeleteLimit struct {
	given bool
	n     int     // at most n files, unless pct; -1: no limit
	pct   float64 // at most pct percent of the set's files
	isPct bool
}

// NoDeleteLimit lets a run delete any number of files.
var NoDeleteLimit = DeleteLimit{given: true, n: -1}

// ErrDeleteLimit is matched by ParseDeleteLimit's errors.
var ErrDeleteLimit = errors.New("bad --max-delete")

// ParseDeleteLimit parses N (at most N files; -1: no limit) or P% (at
// most P percent of the set's files; 100%: no limit).
func ParseDeleteLimit(s string) (DeleteLimit, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 || f > 100 || f != f {
			return DeleteLimit{}, fmt.Errorf("%w %q: want N (files), -1 (no limit) or P%% (0 to 100)", ErrDeleteLimit, s)
		}
		if f == 100 {
			return NoDeleteLimit, nil
		}
		return DeleteLimit{given: true, pct: f, isPct: true}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < -1 {
		return DeleteLimit{}, fmt.Errorf("%w %q: want N (files), -1 (no limit) or P%% (0 to 100)", ErrDeleteLimit, s)
	}
	return DeleteLimit{given: true, n: n}, nil
}

// String spells the limit as --max-delete takes it.
func (l DeleteLimit) String() string {
	switch {
	case !l.given:
		return "50% (default)"
	case l.isPct:
		return strconv.FormatFloat(l.pct, 'f', -1, 64) + "%"
	case l.n < 0:
		return "-1"
	}
	return strconv.Itoa(l.n)
}

func (l DeleteLimit) unlimited() bool { return l.given && !l.isPct && l.n < 0 }

// allows reports whether n deletions in a set of size files are within
// the limit.
func (l DeleteLimit) allows(n, size int) bool {
	switch {
	case n == 0 || l.unlimited():
		return true
	case !l.given:
		return size <= 100 || 2*n <= size
	case l.isPct:
		return float64(n)*100 <= l.pct*float64(size)
	}
	return n <= l.n
}

// deleteWindow is how long deletions count against the limit of later
// runs and notifications of the same Mirror (Options.MaxDeleteWindow).
func (e *engine) deleteWindow() time.Duration {
	if e.opt.MaxDeleteWindow > 0 {
		return e.opt.MaxDeleteWindow
	}
	return time.Hour
}

type deletedAt struct {
	t   time.Time
	set string
	n   int
}

// noteDeleted records n deletions just made in set, for the window.
func (e *engine) noteDeleted(set string, n int) {
	if n <= 0 || e.opt.DryRun {
		return
	}
	e.delMu.Lock()
	e.deleted = append(e.deleted, deletedAt{e.opt.Now(), set, n})
	e.delMu.Unlock()
}

// recentDeletes is how many files this Mirror deleted in set within the
// window (a long-lived Mirror: sync --follow).
func (e *engine) recentDeletes(set string) int {
	e.delMu.Lock()
	defer e.delMu.Unlock()
	since := e.opt.Now().Add(-e.deleteWindow())
	keep := e.deleted[:0]
	n := 0
	for _, d := range e.deleted {
		if d.t.Before(since) {
			continue
		}
		keep = append(keep, d)
		if d.set == set {
			n += d.n
		}
	}
	e.deleted = keep
	return n
}

// setSize is how many files the state records in set.
func (e *engine) setSize(set string) (int, error) {
	size := 0
	err := e.st.each(set, func(string, Record) error { size++; return nil })
	return size, err
}

// deletesAllowed decides, before a run deletes anything in set, whether
// its planned deletions (files the state says are ours) may go ahead:
// with those this Mirror made within the window, they must be within
// Options.MaxDelete of the set's files (as they were before those). size
// is the set's files before the run added any (-1: count them now). A
// refusal is counted in sr and reported; the caller then deletes nothing
// and holds the checkpoint before the refused deletions, so that the
// next run (with a higher limit) applies them. The refusal stands in cp
// (DeleteRefusedOf) until a run allows deletions: the files a refused
// run installed do not make the same deletions a smaller part of the set
// in the next run.
func (e *engine) deletesAllowed(set string, planned, size int, cp *Checkpoint, sr *SetReport) (bool, error) {
	if planned == 0 || e.opt.NoDelete || e.opt.MaxDelete.unlimited() {
		cp.DeleteRefusedOf = 0
		return true, nil
	}
	if size < 0 {
		n, err := e.setSize(set)
		if err != nil {
			return false, err
		}
		size = n
	}
	if cp.DeleteRefusedOf > 0 && cp.DeleteRefusedOf < size {
		size = cp.DeleteRefusedOf
	}
	recent := e.recentDeletes(set)
	if e.opt.MaxDelete.allows(planned+recent, size+recent) {
		cp.DeleteRefusedOf = 0
		return true, nil
	}
	cp.DeleteRefusedOf = size
	sr.DeleteRefused += planned
	sr.DeleteRefusedOf = size + recent
	sr.MaxDelete = e.opt.MaxDelete.String()
	msg := fmt.Sprintf("refusing to delete %d of the set's %d files", planned, size)
	if recent > 0 {
		msg = fmt.Sprintf("refusing to delete %d more of the set's %d files (%d deleted within the last %s)", planned, size+recent, recent, e.deleteWindow())
	}
	e.phase(set, "%s: more than --max-delete %s; nothing deleted (run with --max-delete %s or a higher limit to apply them)", msg, sr.MaxDelete, "100%")
	return false, nil
}

// countDeletes counts the deletions among changes that would remove a
// file the state records (deleteURI's).
func (e *engine) countDeletes(en *rs.Entry, n *int) error {
	if en.MD.Change != rs.Deleted {
		return nil
	}
	rel, err := e.m.Rel(en.Loc)
	if err != nil || e.excluded(rel) {
		return nil
	}
	rec, ok, err := e.st.get(en.Loc)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	if ok && rec.Path == rel {
		*n++
	}
	return nil
}

// refusedDeletes is the part of a set's summary line that says deletions
// were refused.
func (sr *SetReport) refusedDeletes() string {
	if sr.DeleteRefused == 0 {
		return ""
	}
	return fmt.Sprintf("; REFUSED to delete %d of %d files (more than --max-delete %s): nothing deleted, run again with --max-delete 100%% to apply them", sr.DeleteRefused, sr.DeleteRefusedOf, sr.MaxDelete)
}

// holdAt holds the checkpoint before a change that was not applied (a
// refused deletion), like a failure but without counting one.
func (p *pass) holdAt(when rs.Time) {
	p.mu.Lock()
	if !when.IsZero() && (p.failedAt.IsZero() || when.Before(p.failedAt)) {
		p.failedAt = when
	}
	p.mu.Unlock()
}
