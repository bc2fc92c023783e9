package destination

import (
	"context"
	"fmt"
)

// A Source whose state lived inside its directory (serve DIR keeps it in
// DIR/.resourcesync) comes back as a new Source when the directory does:
// an unmounted share, a volume replaced by an empty one. Its Resource
// List then names none of the mirror's files, and a baseline would delete
// them all; --max-delete stops that only for sets of more than 100 files.
// The Destination can tell it from a Source that deleted its files: the
// new Source's history began after the mirror's checkpoint (its Change
// Lists do not reach back to it), where deletions a Source made are
// listed as such. Like the Source's own refusal of an emptied directory
// (--allow-empty), nothing is deleted then and the run fails, naming
// Options.AllowReset (--allow-reset), which lets it go ahead.

// resetAllowed decides, before a baseline or an audit's repair deletes
// anything, whether planned deletions that remove more than half of the
// size files the set records are those of a Source that started afresh
// (a refilled or half-restored directory still names a few of them). It
// returns false (and says so in sr) when they are and AllowReset is not
// given; the caller then deletes nothing, as for a --max-delete refusal.
func (e *engine) resetAllowed(ctx context.Context, s setInfo, planned, size int, cp *Checkpoint, sr *SetReport) (bool, error) {
	if e.opt.AllowReset || e.opt.NoDelete || size == 0 || planned*2 <= size || s.ChangeList == "" || cp.Until.IsZero() {
		return true, nil
	}
	cs, err := e.collectChanges(ctx, s, cp.Until)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		// The Change Lists cannot be read: no sign of a restart to go on.
		return true, nil
	}
	defer cs.close()
	if !cs.begins {
		// Deletions the Source listed (it emptied itself), or no Change
		// List to tell (one that answers 404 says nothing of a restart).
		return true, nil
	}
	sr.ResetRefused += planned
	sr.Reset = fmt.Sprintf("the Source's history restarted after this mirror's checkpoint (%s) and it names only %d of the %d files mirrored here", cs.gap, size-planned, size)
	e.phase(s.Name, "%s: a new Source (an emptied or unmounted directory served afresh?); nothing deleted (run with --allow-reset to mirror it as it is now)", sr.Reset)
	return false, nil
}

// resetRefused is the part of a set's summary line that says a reset was
// refused.
func (sr *SetReport) resetRefused() string {
	if sr.ResetRefused == 0 {
		return ""
	}
	return fmt.Sprintf("; REFUSED to delete the %d files mirrored: %s; run again with --allow-reset to mirror the Source as it is now", sr.ResetRefused, sr.Reset)
}
