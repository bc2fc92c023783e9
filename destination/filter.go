package destination

import "errors"

// errExcluded is a resource whose path Options.Include leaves out of the
// mirror: resourceRel's answer, which its callers skip without a failure.
var errExcluded = errors.New("excluded by the filters")

// excluded reports whether the filters leave the path rel (DEST-relative,
// as the Mapper gives it) out of the mirror. It is the one place the
// filters apply; what it leaves out is skipped where paths enter the
// engine:
//   - entries to install (resourceRel: lists, changes, dump members,
//     notifications, the audit's check) and deletions (deleteURI,
//     countDeletes): never fetched, never deleted;
//   - the records the state holds (recordExcluded: the baseline's sweep,
//     the audit's extras and repair): a file mirrored before it was
//     excluded stays, and does not count towards --max-delete;
//   - the files no record accounts for (auditExtras): not reported.
func (e *engine) excluded(rel string) bool {
	return e.opt.Include != nil && !e.opt.Include(rel)
}

// skipExcluded counts an entry of the Source that the filters leave out.
func (p *pass) skipExcluded() {
	p.count(func(sr *SetReport) { sr.Excluded++ })
}
