package destination

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/discover"
	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/rs"
)

// estimator turns the share of a list read so far into an estimate of its
// number of entries, for progress ETA: the lists are spooled, so their
// sizes are known before their entries are.
type estimator struct {
	e     *engine
	set   string
	n     int64 // entries handed to fn
	last  time.Time
	index struct {
		d    *doc
		done int // children finished
		seen int // children named so far
	}
}

func (est *estimator) tick(leaf *doc) {
	if est == nil {
		return
	}
	est.n++
	if est.n%256 != 0 || !est.last.IsZero() && time.Since(est.last) < 500*time.Millisecond {
		return
	}
	est.last = time.Now()
	frac := func(d *doc) float64 {
		if d == nil || d.Size <= 0 {
			return 0
		}
		return min(1, float64(d.Decoder().Offset())/float64(d.Size))
	}
	share := frac(leaf)
	if ix := est.index.d; ix != nil {
		// Children expected: those named so far scaled by the share of
		// the index read.
		children := float64(est.index.seen)
		if f := frac(ix); f > 0 {
			children = max(children, children/f)
		}
		if children <= 0 {
			return
		}
		share = (float64(est.index.done) + share) / children
	}
	if share <= 0.001 {
		return
	}
	est.e.emit(Event{Kind: EventTotal, Set: est.set, Total: int64(float64(est.n) / share)})
}

// eachEntry calls fn for every entry of d, descending into the documents
// an index lists.
func (e *engine) eachEntry(ctx context.Context, d *doc, depth int, fn func(*rs.Entry) error) error {
	return e.eachEntryEst(ctx, d, depth, nil, fn)
}

func (e *engine) eachEntryEst(ctx context.Context, d *doc, depth int, est *estimator, fn func(*rs.Entry) error) error {
	if est != nil && depth == 0 && d.Head.IsIndex() {
		est.index.d = d
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		en, err := d.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", d.URL, err)
		}
		if d.Head.IsIndex() {
			if depth >= 3 {
				return fmt.Errorf("%s: indexes nested more than 3 deep", d.URL)
			}
			cd, err := e.open(ctx, en.Loc)
			if err != nil {
				return err
			}
			if est != nil && depth == 0 {
				est.index.seen++
			}
			err = e.eachEntryEst(ctx, cd, depth+1, est, fn)
			cd.Close()
			if err != nil {
				return err
			}
			if est != nil && depth == 0 {
				est.index.done++
			}
			continue
		}
		en.Loc = e.m.Key(en.Loc)
		if err := fn(en); err != nil {
			return err
		}
		est.tick(d)
	}
}

// planSync submits a fetch for an entry unless the state shows that the
// file here already has the bytes the entry describes.
func (p *pass) planSync(en *rs.Entry, track bool) error {
	rel, err := p.e.resourceRel(en.Loc)
	if errors.Is(err, errExcluded) {
		p.skipExcluded()
		return nil
	}
	if err != nil {
		// Refused URIs can never succeed: they are failures, but they do
		// not hold the checkpoint back.
		p.fail(en.Loc, "", rs.Time{}, err)
		if track {
			return p.e.stillListed(en.Loc)
		}
		return nil
	}
	// Two URIs that are not equivalent (NormalizeURI) but map to one
	// file: the one named first keeps it. A baseline's list replaces
	// what the state recorded; a change must not take a file another
	// recorded URI still names (unless this pass deleted that one).
	claims, err := p.claims(track)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	wasReleased := !track && claims.get(rel) == released
	prev, err := claims.claim(rel, en.Loc)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	owner, rec, ok, err := p.e.st.lookup(en.Loc, rel)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	if prev == en.Loc {
		// Listed twice (perhaps spelled two equivalent ways): once is
		// enough.
		p.count(func(sr *SetReport) { sr.Skipped++ })
		p.e.emit(Event{Kind: EventSkipped, Set: p.set, URI: en.Loc, Path: rel, Message: "listed more than once"})
		return nil
	}
	if prev == "" && !track && !wasReleased && owner != en.Loc {
		prev = owner
	}
	if prev != "" {
		p.fail(en.Loc, rel, rs.Time{}, fmt.Errorf("%w: %s and %s both map to %s", ErrPathCollision, prev, en.Loc, rel))
		return nil
	}
	if err := p.e.caseCollision(claims, rel, en.Loc, owner); err != nil {
		if !errors.Is(err, ErrPathCollision) {
			return err
		}
		p.fail(en.Loc, rel, rs.Time{}, err)
		return nil
	}
	abs := p.e.m.Path(rel)
	if ok && rec.Path == rel && sameRemote(en, &rec) && (p.e.madeThisRun(&rec) || p.e.unchangedIn(abs, &rec, &p.stats)) {
		p.count(func(sr *SetReport) { sr.Skipped++ })
		p.e.emit(Event{Kind: EventSkipped, Set: p.set, URI: en.Loc, Path: rel, Bytes: rec.Length})
		return nil
	}
	j := job{uri: en.Loc, rel: rel, e: *en}
	if ok && rec.Path == rel {
		j.notOwned = rec.NotOwned
		// Ours, but changed here or at the Source: when the size still
		// fits, hash it before downloading anything.
		if fi, err := p.lstat(abs); err == nil && fi.Mode().IsRegular() && (!en.MD.HasLength || fi.Size() == en.MD.Length) && hasDigest(en) {
			j.checkLocal = true
		}
	} else if owner == "" && p.e.emptyTarget {
		// The Target held nothing when the run began: nothing to look
		// at (on a bucket, a HEAD each); the write's NoReplace refuses
		// whatever appeared since.
	} else if _, err := p.lstat(abs); err == nil && owner == "" {
		// A file the state does not name: left by a run that was killed
		// before recording it, or someone else's. It is hashed, adopted
		// with the right bytes, and otherwise not overwritten.
		j.checkLocal, j.foreign = true, true
	} else if err == nil {
		// Recorded under another spelling of the URI that the list no
		// longer uses: ours; the new record replaces that one.
		j.checkLocal = hasDigest(en)
	}
	return p.submit(j)
}

func hasDigest(en *rs.Entry) bool {
	return digestHex(en.MD.Hashes, rs.SHA256) != "" || digestHex(en.MD.Hashes, rs.MD5) != "" || digestHex(en.MD.Hashes, rs.SHA1) != ""
}

// deleteURI mirrors a deletion at the Source.
func (p *pass) deleteURI(en *rs.Entry) error {
	rel, err := p.e.m.Rel(en.Loc)
	if err != nil {
		p.fail(en.Loc, "", rs.Time{}, err)
		return nil
	}
	if p.e.excluded(rel) {
		p.skipExcluded()
		return nil
	}
	rec, ok, err := p.e.st.get(en.Loc)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	if ok && rec.Path == rel && p.refuse {
		p.holdAt(holdTime(en)) // over --max-delete: the next run applies it
		return nil
	}
	if ok && rec.Path == rel {
		// Another URI of this pass may take the path now.
		claims, err := p.claims(false)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrState, err)
		}
		if err := claims.add(rel, released); err != nil {
			return fmt.Errorf("%w: %v", ErrState, err)
		}
	}
	if !ok {
		if _, err := p.e.lstat(p.e.m.Path(rel)); err == nil {
			p.kept(en.Loc, rel, "deleted at the Source, but not written by resourcesync: left alone")
		} else {
			p.count(func(sr *SetReport) { sr.Skipped++ })
		}
		return nil
	}
	p.deleteRecord(en.Loc, rec, "deleted at the Source", holdTime(en))
	return nil
}

// stillListed marks the file of uri, listed but refused now (mirrored
// under another policy: an --allow-host given then and not now), as
// named by the list, so that the sweep after it does not delete a file
// the Source did not delete.
func (e *engine) stillListed(uri string) error {
	rec, ok, err := e.st.get(uri)
	if n := NormalizeURI(uri); err == nil && !ok && n != uri {
		rec, ok, err = e.st.get(n) // Key leaves a refused URI as written
	}
	if err == nil && ok {
		err = e.seen.add(rec.Path, uri)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	return nil
}

func (p *pass) kept(uri, rel, why string) {
	p.count(func(sr *SetReport) { sr.Kept++ })
	p.e.emit(Event{Kind: EventKept, Set: p.set, URI: uri, Path: rel, Message: why})
}

// deleteRecord removes a file this tool installed, unless it was changed
// here since or --no-delete is in force; in those cases the file is kept
// and no longer counted as ours.
func (p *pass) deleteRecord(uri string, rec Record, why string, hold rs.Time) {
	abs := p.e.m.Path(rec.Path)
	if p.e.opt.NoDelete {
		p.kept(uri, rec.Path, why+"; kept (--no-delete)")
		p.record(uri, nil)
		return
	}
	_, err := p.e.lstat(abs)
	switch {
	case errors.Is(err, fetch.ErrSymlinkInDest):
		p.fail(uri, rec.Path, hold, fmt.Errorf("%s, but not removed here: %w", why, err))
		return
	case errors.Is(err, fs.ErrNotExist):
		if !p.e.opt.DryRun {
			// Removed already, by a run killed before it recorded the
			// removal, perhaps while it removed the emptied directories.
			p.e.removeEmptyParents(abs)
		}
		p.record(uri, nil)
	case rec.NotOwned:
		p.kept(uri, rec.Path, why+"; kept because resourcesync did not write it (it was here already with the Source's bytes)")
		p.record(uri, nil)
		return
	case !p.e.unchangedHere(abs, &rec):
		p.kept(uri, rec.Path, why+"; kept because it was changed here after it was installed")
		p.record(uri, nil)
		return
	case !p.e.opt.DryRun:
		if f := p.e.opt.Fence; f != nil {
			if err := f(context.WithoutCancel(p.ctx)); err != nil {
				p.fail(uri, rec.Path, hold, fmt.Errorf("%s, but not removed here: fenced: %w", why, err))
				return
			}
		}
		err := p.e.dir.RemoveOwned(abs, func(fi fs.FileInfo) bool { return p.e.unchangedInfo(fi, &rec) })
		if errors.Is(err, errChangedHere) {
			p.kept(uri, rec.Path, why+"; kept because it was changed here after it was installed")
			p.record(uri, nil)
			return
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			p.fail(uri, rec.Path, hold, fmt.Errorf("%s, but not removed here: %w", why, err))
			return
		}
		p.e.removeEmptyParents(abs)
		p.record(uri, nil)
	}
	p.count(func(sr *SetReport) { sr.Deleted++ })
	msg := why
	if p.e.opt.DryRun {
		msg += " (dry run)"
	}
	p.e.emit(Event{Kind: EventDeleted, Set: p.set, URI: uri, Path: rec.Path, Message: msg, Change: string(rs.Deleted), DateTime: knownTime(hold)})
}

func (e *engine) plan(set, mode string) {
	e.emit(Event{Kind: EventPlan, Set: set, Mode: mode, Total: -1, TotalBytes: -1})
}

// baseline brings the set in line with its current Resource List and the
// changes listed after it: fetch what differs, delete what the list no
// longer names. The Change Lists after the list's `at` are read first, so
// that an entry the Source changed or deleted after writing the list is
// taken from its latest change instead of failing (its bytes no longer
// match, or it is gone); only failures the Change Lists do not explain
// count.
func (e *engine) baseline(ctx context.Context, s setInfo, cp *Checkpoint, sr *SetReport, modes *[]string) error {
	if s.ResourceList == "" {
		return fmt.Errorf("%w: set %s offers no Resource List", ErrDiscovery, s.Name)
	}
	started := e.opt.Now()
	if s.ResourceDump != "" && !e.opt.NoDump && !e.opt.DryRun && !cp.Baseline && e.setEmpty(s.Name) {
		skipped, err := e.dumpBaseline(ctx, s, sr)
		if !skipped {
			(*modes)[len(*modes)-1] = "baseline (dump)"
		}
		if err != nil {
			return err
		}
	}
	d, err := e.open(ctx, s.ResourceList)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDiscovery, err)
	}
	defer d.Close()
	at := d.Head.MD.At.Time()
	cs := e.newChangeSet(at)
	// clErr is a Change List that could not be read (a Source answering
	// 5xx until its first change, as resync-simulator does): the Resource
	// List's snapshot is still right as of its `at`, so it is installed
	// and the checkpoint stops there; the run then fails naming the
	// Change List, and the next one catches up from `at`.
	var clErr error
	if s.ChangeList != "" && !at.IsZero() {
		e.phase(s.Name, "changes since the Resource List (%s) from %s", fmtTime(at), s.ChangeList)
		if cs, err = e.collectChanges(ctx, s, at); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !errors.Is(err, ErrChangeList) {
				return fmt.Errorf("%w: %w", ErrDiscovery, err)
			}
			clErr = err
			e.phase(s.Name, "cannot read the Change List (%v): installing the Resource List's snapshot as of %s only", err, fmtTime(at))
			cs = e.newChangeSet(at)
		}
		if cs.gap != "" {
			// The list is still right as of its `at`; what changed since
			// is caught up by a later run.
			e.phase(s.Name, "cannot catch up after the Resource List: %s", cs.gap)
			if sr.Gap == "" {
				sr.Gap = cs.gap
			} else {
				sr.Gap += "; again after repair: " + cs.gap
			}
		}
	}
	defer cs.close()
	if at.IsZero() {
		// No `at`: start the next incremental run a little before ours.
		at = started.Add(-time.Minute)
	}
	failedBefore := sr.Failed
	// --max-delete measures against the set as it was before this run
	// added to it.
	sizeBefore, err := e.setSize(s.Name)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	e.plan(s.Name, "baseline")
	e.phase(s.Name, "baseline from %s", s.ResourceList)
	sus := &suspects{}
	p := e.newPass(ctx, s.Name, sr).watchVanished(sus)
	p.useBulk(d)
	err = e.eachEntryEst(ctx, d, 0, &estimator{e: e, set: s.Name}, func(en *rs.Entry) error {
		c, err := cs.get(en.Loc)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrState, err)
		}
		if c != nil {
			// Changed after the list: the change is applied below. The
			// path counts as listed, so the sweep leaves it to the change.
			if rel, err := e.m.Rel(en.Loc); err == nil {
				if err := e.seen.add(rel, en.Loc); err != nil {
					return fmt.Errorf("%w: %v", ErrState, err)
				}
			}
			return nil
		}
		return p.planSync(en, true)
	})
	if ferr := p.finish(); err == nil {
		err = ferr
	}
	if err != nil {
		if errors.Is(err, ErrState) || ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("%w: %w", ErrDiscovery, err)
	}
	if err := e.seen.flush(); err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	// What the state holds and neither the list nor a later change names
	// was deleted.
	swept := func(uri string, r Record) (bool, error) {
		if e.seen.has(r.Path) || e.excluded(r.Path) {
			return false, nil
		}
		if c, err := cs.get(uri); err != nil {
			return false, fmt.Errorf("%w: %v", ErrState, err)
		} else if c != nil {
			return false, nil
		}
		return true, nil
	}
	// Within --max-delete, the sweep and the deletions listed after the
	// Resource List together, or none of them.
	refusedBefore := sr.DeleteRefused
	planned := 0
	err = e.st.each(s.Name, func(uri string, r Record) error {
		ok, err := swept(uri, r)
		if ok {
			planned++
		}
		return err
	})
	if err == nil {
		err = cs.each(func(en *rs.Entry) error { return e.countDeletes(en, &planned) })
	}
	if err != nil {
		return err
	}
	resetBefore := sr.ResetRefused
	allowed, err := e.resetAllowed(ctx, s, planned, sizeBefore, cp, sr)
	if err == nil && allowed {
		allowed, err = e.deletesAllowed(s.Name, planned, sizeBefore, cp, sr)
	}
	if err != nil {
		return err
	}
	p = e.newPass(ctx, s.Name, sr)
	p.refuse = !allowed
	err = e.st.each(s.Name, func(uri string, r Record) error {
		if ok, err := swept(uri, r); !ok || err != nil || !allowed {
			return err
		}
		p.deleteRecord(uri, r, "not in the Resource List", rs.Time{})
		return nil
	})
	if ferr := p.finish(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	// The changes after the list, oldest first.
	until := at
	if cs.len() > 0 {
		e.phase(s.Name, "%d changes after the Resource List", cs.len())
		p = e.newPass(ctx, s.Name, sr).watchVanished(sus)
		p.refuse = !allowed
		err = cs.each(func(en *rs.Entry) error {
			if en.MD.Change == rs.Deleted {
				return p.deleteURI(en)
			}
			return p.planSync(en, false)
		})
		if ferr := p.finish(); err == nil {
			err = ferr
		}
		if err != nil {
			return err
		}
	}
	if cs.gap == "" && cs.until.After(until) {
		until = cs.until
	}
	// What changed or went away while the lists were read: judged
	// against the Source's later state.
	since := until
	if cs.gap != "" || clErr != nil || d.Head.MD.At.IsZero() {
		since = time.Time{} // no Change List reach to build on: the Resource List
	}
	if err := e.settle(ctx, s, p, sus, since); err != nil {
		return err
	}
	if until.After(sr.SourceUntil) {
		sr.SourceUntil = until
	}
	switch {
	case sr.DeleteRefused != refusedBefore || sr.ResetRefused != resetBefore:
		// The deletions refused are found again only by a baseline:
		// the next run makes one.
		cp.Baseline = false
	case sr.Failed == failedBefore:
		cp.Baseline = true
		cp.At = at
		cp.Until = until
	}
	if clErr != nil {
		msg := fmt.Sprintf("%v (the snapshot of the Resource List as of %s is installed; the next run catches up from the Change Lists)", clErr, fmtTime(at))
		sr.Failed++
		if len(sr.Failures) < maxFailuresListed {
			sr.Failures = append(sr.Failures, failure(s.ChangeList, "", msg))
		}
		e.emit(Event{Kind: EventFailed, Set: s.Name, URI: s.ChangeList, Error: msg})
	}
	return nil
}

func (e *engine) setEmpty(set string) bool {
	empty := true
	e.st.each(set, func(string, Record) error { empty = false; return errStop })
	return empty
}

var errStop = errors.New("stop")

// clRef is a Change List named by an index or an archive.
type clRef struct {
	loc         string
	from, until rs.Time
}

// changes collected from Change Lists: the last change per URI, spooled
// to disk. The caller closes it.
type changeSet struct {
	changeStore
	until time.Time // everything before it is covered
	gap   string
	// begins: the gap is that the Source's Change Lists begin after the
	// point asked for (its history restarted, or lists were dropped),
	// not a missing list or a hole between lists.
	begins bool
	lists  int
	// resume: a feed's nodes the next run may start from (Checkpoint.Resume).
	resume []string
}

func (e *engine) newChangeSet(until time.Time) *changeSet {
	return &changeSet{changeStore: newChangeSpool(e.scratch), until: until}
}

// collectChanges reads the Change Lists that cover changes at or after
// from, checks that they are contiguous, and keeps the last change per URI.
func (e *engine) collectChanges(ctx context.Context, s setInfo, from time.Time) (_ *changeSet, err error) {
	cs := e.newChangeSet(from)
	defer func() {
		if err == nil {
			err = cs.flush()
		}
		if err != nil {
			cs.close() // the scratch database goes, whatever failed
		}
	}()
	var refs []clRef
	seen := map[string]bool{}
	var index string // the rel="index" of a Change List named directly
	addRefs := func(u string) error {
		d, err := e.open(ctx, u)
		if err != nil {
			return err
		}
		defer d.Close()
		if !d.Head.IsIndex() && d.Head.Capability() == rs.CapChangeList {
			if !seen[d.URL] {
				seen[d.URL] = true
				refs = append(refs, clRef{d.URL, d.Head.MD.From, d.Head.MD.Until})
			}
			if l := d.Head.Link(rs.RelIndex); l != "" {
				if iu, err := url.Parse(d.URL); err == nil {
					if ru, err := iu.Parse(l); err == nil {
						index = ru.String()
					}
				}
			}
			return nil
		}
		for {
			en, err := d.Next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", d.URL, err)
			}
			if !seen[en.Loc] {
				seen[en.Loc] = true
				refs = append(refs, clRef{en.Loc, en.MD.From, en.MD.Until})
			}
		}
	}
	if err := addRefs(s.ChangeList); err != nil {
		var se *discover.StatusError
		if errors.As(err, &se) && (se.Code == http.StatusNotFound || se.Code == http.StatusGone) {
			// Advertised but not there (a Source that has not written its
			// first Change List yet): no change since the Resource List
			// can be known, which is a gap, repaired from the Resource
			// List, not a failure to read the Source.
			cs.gap = fmt.Sprintf("the Source advertises the Change List %s but answers %d (%s)", s.ChangeList, se.Code, http.StatusText(se.Code))
			return cs, nil
		}
		return nil, fmt.Errorf("%w: %w", ErrChangeList, err)
	}
	earliest := func() time.Time {
		var t time.Time
		for _, r := range refs {
			if ft := r.from.Time(); !r.from.IsZero() && (t.IsZero() || ft.Before(t)) {
				t = ft
			}
		}
		return t
	}
	if index != "" && !from.IsZero() && (len(refs) == 0 || earliest().After(from)) {
		// The Capability List names the open Change List itself (a
		// Source rotating it there, as serve --changelist-index=false
		// does): the lists since the checkpoint are in its index
		// (RS-CHL-7). One that cannot be read leaves the archive, or a
		// gap, to tell.
		if err := addRefs(index); err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if s.ChangeListArchive != "" && !from.IsZero() && (len(refs) == 0 || earliest().After(from)) {
		if err := addRefs(s.ChangeListArchive); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrChangeList, err)
		}
	}
	// Lists that end before from are done already.
	keep := refs[:0]
	for _, r := range refs {
		if from.IsZero() || r.until.IsZero() || !r.until.Time().Before(from) {
			keep = append(keep, r)
		}
	}
	refs = keep
	sort.SliceStable(refs, func(i, k int) bool { return refs[i].from.Before(refs[k].from) })
	if len(refs) == 0 {
		return cs, nil
	}
	if !from.IsZero() && !refs[0].from.IsZero() && refs[0].from.Time().After(from) {
		cs.gap = fmt.Sprintf("changes from %s to %s are no longer listed by the Source", fmtTime(from), refs[0].from)
		cs.begins = true
		return cs, nil
	}
	for i := 1; i < len(refs); i++ {
		prev := refs[i-1]
		if !prev.until.IsZero() && refs[i].from.After(prev.until) {
			cs.gap = fmt.Sprintf("no Change List covers %s to %s", prev.until, refs[i].from)
			return cs, nil
		}
	}
	for _, r := range refs {
		d, err := e.open(ctx, r.loc)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrChangeList, err)
		}
		last := from
		err = func() error {
			defer d.Close()
			for {
				if err := ctx.Err(); err != nil {
					return err
				}
				en, err := d.Next()
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return fmt.Errorf("%s: %w", d.URL, err)
				}
				t := changeTime(en)
				if !t.IsZero() && !from.IsZero() && t.Time().Before(from) {
					continue
				}
				if !t.IsZero() && t.Time().After(last) {
					last = t.Time()
				}
				// Several changes to one resource resolve to the last.
				en.Loc = e.m.Key(en.Loc)
				if err := cs.add(en); err != nil {
					return fmt.Errorf("%w: %v", ErrState, err)
				}
			}
		}()
		if err != nil {
			return nil, err
		}
		cs.lists++
		until := d.Head.MD.Until
		if until.IsZero() {
			until = r.until
		}
		switch {
		case !until.IsZero():
			if ut := until.Time(); ut.After(cs.until) {
				cs.until = ut
			}
		default:
			// An open list: covered up to its last change.
			if ft := r.from.Time(); ft.After(last) {
				last = ft
			}
			if last.After(cs.until) {
				cs.until = last
			}
		}
	}
	return cs, nil
}

// ErrChangeList wraps a Change List (or its index or archive) that the
// Source advertises but that could not be read.
var ErrChangeList = errors.New("Change List unreadable")

// changeTime is when a change happened as far as its entry tells: the
// rs:md datetime, else the lastmod — but not for a deletion, whose lastmod
// (as py-resync writes it) is the deleted resource's, not the deletion's.
// A zero time is unknown: the change is applied whatever the checkpoint
// (a deletion is idempotent).
func changeTime(en *rs.Entry) rs.Time {
	if !en.MD.DateTime.IsZero() {
		return en.MD.DateTime
	}
	if en.MD.Change == rs.Deleted {
		return rs.Time{}
	}
	return en.LastMod
}

// holdTime is the time a failed change holds the checkpoint back to: its
// own, or, when unknown, the earliest there is.
func holdTime(en *rs.Entry) rs.Time {
	if t := en.EventTime(); !t.IsZero() {
		return t
	}
	return rs.NewTime(time.Unix(0, 0).UTC())
}

// heldAt is where a failed change at t holds the checkpoint: just before
// it. The next incremental run applies changes at or after the checkpoint,
// the failed one among them; and a notification that starts at t (the
// until of the one whose last change failed) does not continue from the
// checkpoint, so it brings a catch-up from the Change Lists rather than
// moving the checkpoint past the failed change.
func heldAt(t rs.Time) time.Time { return t.Time().Add(-time.Nanosecond) }

// knownTime is t, or the zero time when t is unknown (zero, or the
// epoch holdTime stands in for an unknown time).
func knownTime(t rs.Time) time.Time {
	if t.IsZero() || t.Time().Unix() <= 0 {
		return time.Time{}
	}
	return t.Time()
}

func fmtTime(t time.Time) string { return rs.NewTime(t).String() }

// incremental applies the changes listed since the checkpoint. A gap is
// returned (and nothing applied) when the Change Lists no longer reach
// back to it.
func (e *engine) incremental(ctx context.Context, s setInfo, cp *Checkpoint, sr *SetReport) (string, error) {
	from := cp.Until
	e.phase(s.Name, "changes since %s from %s", fmtTime(from), s.ChangeList)
	cs, err := e.collectChanges(ctx, s, from)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("%w: %w", ErrDiscovery, err)
	}
	defer cs.close()
	if cs.gap != "" {
		return cs.gap, nil
	}
	return "", e.apply(ctx, s, cp, sr, cs, "incremental")
}

// apply makes DEST take the changes of cs, oldest first, and moves the
// checkpoint as far as they were applied: to cs.until, or before the
// first that failed.
func (e *engine) apply(ctx context.Context, s setInfo, cp *Checkpoint, sr *SetReport, cs *changeSet, mode string) error {
	from := cp.Until
	planned := 0
	if err := cs.each(func(en *rs.Entry) error { return e.countDeletes(en, &planned) }); err != nil {
		return err
	}
	allowed, err := e.deletesAllowed(s.Name, planned, -1, cp, sr)
	if err != nil {
		return err
	}
	e.emit(Event{Kind: EventPlan, Set: s.Name, Mode: mode, Total: int64(cs.len()), TotalBytes: -1})
	sus := &suspects{}
	p := e.newPass(ctx, s.Name, sr).watchVanished(sus)
	p.refuse = !allowed
	// Oldest first, so that the checkpoint can stop before a failure.
	err = cs.each(func(en *rs.Entry) error {
		if en.MD.Change == rs.Deleted {
			return p.deleteURI(en)
		}
		return p.planSync(en, false)
	})
	if ferr := p.finish(); err == nil {
		err = ferr
	}
	if err == nil {
		err = e.settle(ctx, s, p, sus, cs.until)
	}
	if err != nil {
		return err
	}
	if cs.until.After(sr.SourceUntil) {
		sr.SourceUntil = cs.until
	}
	if !p.failedAt.IsZero() {
		if t := heldAt(p.failedAt); t.After(from) {
			cp.Until = t
		}
	} else if cs.until.After(cp.Until) {
		cp.Until = cs.until
	}
	return nil
}

// audit re-hashes DEST against the current Resource List and the changes
// listed after it.
func (e *engine) audit(ctx context.Context, s setInfo, cp *Checkpoint, sr *SetReport) error {
	if s.ResourceList == "" {
		return fmt.Errorf("%w: set %s offers no Resource List to audit against", ErrDiscovery, s.Name)
	}
	sr.Audit = map[string]int{}
	d, err := e.open(ctx, s.ResourceList)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDiscovery, err)
	}
	defer d.Close()
	at := d.Head.MD.At.Time()
	cs := e.newChangeSet(at)
	if s.ChangeList != "" && !at.IsZero() {
		if cs, err = e.collectChanges(ctx, s, at); err != nil {
			return fmt.Errorf("%w: %w", ErrDiscovery, err)
		}
		if cs.gap != "" {
			sr.Gap = cs.gap
		}
	}
	defer cs.close()
	e.plan(s.Name, "audit")
	e.phase(s.Name, "audit against %s", s.ResourceList)
	failedBefore := sr.Failed
	sizeBefore, err := e.setSize(s.Name) // as in baseline, for --max-delete
	if err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	p := e.newPass(ctx, s.Name, sr)
	check := func(en *rs.Entry) error {
		rel, err := e.resourceRel(en.Loc)
		if errors.Is(err, errExcluded) {
			p.skipExcluded()
			return nil
		}
		if err != nil {
			p.fail(en.Loc, "", rs.Time{}, err)
			return e.stillListed(en.Loc)
		}
		if prev, err := e.seen.claim(rel, en.Loc); err != nil {
			return fmt.Errorf("%w: %v", ErrState, err)
		} else if prev == en.Loc {
			return nil // listed twice
		} else if prev != "" {
			p.fail(en.Loc, rel, rs.Time{}, fmt.Errorf("%w: %s and %s both map to %s", ErrPathCollision, prev, en.Loc, rel))
			return nil
		}
		j := job{uri: en.Loc, rel: rel, e: *en, checkLocal: true, audit: true}
		rec, ok, err := e.st.get(en.Loc)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrState, err)
		}
		owner := ""
		if ok && rec.Path == rel {
			owner = en.Loc
		}
		if err := e.caseCollision(e.seen, rel, en.Loc, owner); err != nil {
			if !errors.Is(err, ErrPathCollision) {
				return err
			}
			p.fail(en.Loc, rel, rs.Time{}, err)
			return nil
		}
		if ok && rec.Path == rel {
			j.notOwned = rec.NotOwned
		} else {
			j.foreign = true
		}
		return p.submit(j)
	}
	err = e.eachEntryEst(ctx, d, 0, &estimator{e: e, set: s.Name}, func(en *rs.Entry) error {
		c, err := cs.get(en.Loc)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrState, err)
		}
		if c != nil {
			if err := cs.remove(en.Loc); err != nil {
				return fmt.Errorf("%w: %v", ErrState, err)
			}
			if c.MD.Change == rs.Deleted {
				return nil
			}
			en = c
		}
		return check(en)
	})
	// Resources created after the Resource List.
	if err == nil {
		if err = cs.flush(); err != nil {
			err = fmt.Errorf("%w: %v", ErrState, err)
		}
	}
	if err == nil {
		err = cs.each(func(en *rs.Entry) error {
			if en.MD.Change == rs.Deleted {
				return nil
			}
			return check(en)
		})
	}
	if ferr := p.finish(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	if err := e.seen.flush(); err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	// Files this tool installed that the Source no longer has.
	refusedBefore := sr.DeleteRefused
	allowed := true
	if e.opt.Repair {
		planned := 0
		err := e.st.each(s.Name, func(uri string, r Record) error {
			if !e.seen.has(r.Path) && !e.excluded(r.Path) {
				if _, err := e.lstat(e.m.Path(r.Path)); err == nil {
					planned++
				}
			}
			return nil
		})
		if err == nil {
			allowed, err = e.resetAllowed(ctx, s, planned, sizeBefore, cp, sr)
		}
		if err == nil && allowed {
			allowed, err = e.deletesAllowed(s.Name, planned, sizeBefore, cp, sr)
		}
		if err != nil {
			return err
		}
	}
	p = e.newPass(ctx, s.Name, sr)
	err = e.st.each(s.Name, func(uri string, r Record) error {
		if e.seen.has(r.Path) || e.excluded(r.Path) {
			return nil
		}
		if _, err := e.lstat(e.m.Path(r.Path)); err != nil {
			p.record(uri, nil)
			return nil
		}
		p.auditResult(job{uri: uri, rel: r.Path}, AuditExtra)
		if e.opt.Repair && allowed {
			p.deleteRecord(uri, r, "not at the Source", rs.Time{})
		}
		return nil
	})
	if ferr := p.finish(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	if e.opt.Repair && sr.Failed == failedBefore && sr.DeleteRefused == refusedBefore && sr.ResetRefused == 0 && cs.gap == "" && !at.IsZero() {
		cp.Baseline, cp.At, cp.Until = true, at, cs.until
		if cp.Until.Before(at) {
			cp.Until = at
		}
	}
	return nil
}

// auditExtras reports files in DEST that no set accounts for: neither
// listed by the Source nor recorded as installed here. They are never
// deleted.
func (e *engine) auditExtras(ctx context.Context, sr *SetReport) error {
	if e.opt.Set != "" {
		return nil // other sets' files would look extra
	}
	if err := e.st.each("", func(uri string, r Record) error { return e.seen.add(r.Path, uri) }); err != nil {
		return err
	}
	if err := e.seen.flush(); err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	if e.tg != nil {
		return e.auditTargetExtras(ctx, sr)
	}
	root := e.m.Root()
	// Directories are read in batches, unsorted (the report sorts): a
	// directory of millions of files is never held in memory at once.
	var walk func(dir, rel string) error
	walk = func(dir, rel string) error {
		f, err := os.Open(dir)
		if err != nil {
			return nil
		}
		defer f.Close()
		for {
			ents, err := f.ReadDir(512)
			for _, d := range ents {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				r := d.Name()
				if rel != "" {
					r = rel + "/" + r
				}
				if d.IsDir() {
					if rel == "" && d.Name() == StateDirName {
						continue
					}
					if err := walk(filepath.Join(dir, d.Name()), r); err != nil {
						return err
					}
					continue
				}
				if strings.HasPrefix(d.Name(), tempPrefix) || e.seen.has(r) || e.excluded(r) {
					continue
				}
				if sr.Audit == nil {
					sr.Audit = map[string]int{}
				}
				sr.Audit[AuditExtra]++
				e.emit(Event{Kind: EventAudit, Set: sr.Set, Path: r, Status: AuditExtra, Message: "not at the Source and not written by resourcesync: left alone"})
			}
			if err != nil {
				return nil // io.EOF, or a directory that cannot be read: skipped, as before
			}
		}
	}
	return walk(root, "")
}
