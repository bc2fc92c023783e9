package destination

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/storage"
)

// mirrorDir is where a mirror's files are written, read and deleted: DEST
// itself (localDir, the fast paths of fetch.Dir) or a storage.Target
// (targetDir, Options.Target). Paths are absolute paths below the
// Mapper's root, as everywhere in the engine; a targetDir makes them keys.
type mirrorDir interface {
	LstatIn(abs string, c *fetch.Parents) (fs.FileInfo, error)
	Lstat(abs string) (fs.FileInfo, error)
	Open(abs string) (io.ReadCloser, error)
	// RemoveOwned removes the file at abs if it is still the one the
	// caller judged (unchanged reports that of what is there now): a
	// Target removes only the version it looked at.
	RemoveOwned(abs string, unchanged func(fs.FileInfo) bool) error
	RemoveEmptyParents(abs string)
	// KeepOld keeps the file at abs, which Options.Force is about to
	// replace, as abs+ForceSuffix (errOldTaken when that is another
	// file): the version kept (a Target's object's) and undo, which
	// takes the kept copy back when the replacement did not happen.
	KeepOld(abs string) (version string, undo func(), err error)
}

// errChangedHere: a Target's object changed between the check that it
// is ours and its removal or overwrite; it is left alone.
var errChangedHere = errors.New("changed here since it was installed")

// localDir is DEST on the local file system.
type localDir struct{ *fetch.Dir }

func (d localDir) Open(abs string) (io.ReadCloser, error) { return d.Dir.Open(abs) }

// RemoveOwned removes the file: the caller's lstat was its check (a local
// file system has no conditional removal).
func (d localDir) RemoveOwned(abs string, _ func(fs.FileInfo) bool) error { return d.Dir.Remove(abs) }

// targetDir is a storage.Target seen as DEST: the Mapper's root stands
// for the Target's root, and only the state lives there.
type targetDir struct {
	tg   storage.Target
	root string // the Mapper's root, absolute
	ctx  context.Context
}

// key is the key of the file at abs, below the root.
func (d *targetDir) key(abs string) (string, error) {
	rel, err := filepath.Rel(d.root, abs)
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%w: %s", fetch.ErrOutsideDir, abs)
	}
	return filepath.ToSlash(rel), nil
}

// toFS makes the storage's answers the file system's: no object is
// fs.ErrNotExist, a refusal (a symbolic link in a local Target) is
// fetch.ErrSymlinkInDest, as the engine handles them.
func toFS(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrNotExist):
		return fmt.Errorf("%w (%w)", fs.ErrNotExist, err)
	case errors.Is(err, storage.ErrRefused):
		return fmt.Errorf("%w: %w", fetch.ErrSymlinkInDest, err)
	}
	return err
}

func (d *targetDir) Lstat(abs string) (fs.FileInfo, error) {
	key, err := d.key(abs)
	if err != nil {
		return nil, err
	}
	in, err := d.tg.Stat(d.ctx, key)
	if err != nil {
		return nil, toFS(err)
	}
	return objectInfo{in}, nil
}

func (d *targetDir) LstatIn(abs string, _ *fetch.Parents) (fs.FileInfo, error) { return d.Lstat(abs) }

func (d *targetDir) Open(abs string) (io.ReadCloser, error) {
	key, err := d.key(abs)
	if err != nil {
		return nil, err
	}
	r, _, err := d.tg.Open(d.ctx, key)
	return r, toFS(err)
}

func (d *targetDir) RemoveOwned(abs string, unchanged func(fs.FileInfo) bool) error {
	key, err := d.key(abs)
	if err != nil {
		return err
	}
	in, err := d.tg.Stat(d.ctx, key)
	if err != nil {
		return toFS(err)
	}
	if !unchanged(objectInfo{in}) {
		return errChangedHere
	}
	if err := d.tg.Remove(d.ctx, key, in.Version); errors.Is(err, storage.ErrExists) {
		return errChangedHere
	} else if err != nil {
		return toFS(err)
	}
	return nil
}

// RemoveEmptyParents removes the directories a removal emptied, where
// the Target has directories (a local one): a removal killed between the
// file and its directories leaves them to the next run. Elsewhere there
// is nothing to do.
func (d *targetDir) RemoveEmptyParents(abs string) {
	if r, ok := d.tg.(interface{ RemoveEmptyDirs(key string) }); ok {
		if key, err := d.key(abs); err == nil {
			r.RemoveEmptyDirs(key)
		}
	}
}

// objectInfo is a Target's object as a regular file.
type objectInfo struct{ in storage.Info }

func (o objectInfo) Name() string       { return path.Base(o.in.Key) }
func (o objectInfo) Size() int64        { return o.in.Size }
func (o objectInfo) Mode() fs.FileMode  { return 0o644 }
func (o objectInfo) ModTime() time.Time { return o.in.ModTime }
func (o objectInfo) IsDir() bool        { return false }
func (o objectInfo) Sys() any           { return o.in }

// targetRequest makes req write to the Target: under the resource's
// key, over nothing (NoReplace) or over the version of the object there
// that is ours, unchanged since it was recorded (IfVersion); an object
// this tool did not write, or one changed since, is never overwritten
// (ErrNotOwned). foreign: the state does not name the object as this
// URI's (adopted only with the right bytes, checked before).
func (p *pass) targetRequest(req *fetch.Request, j job) error {
	e := p.e
	req.Target, req.Key, req.ContentType = e.tg, j.rel, j.e.MD.Type
	req.Path, req.Dir, req.Parents = "", nil, nil
	_, canSync := e.tg.(storage.Syncer)
	req.NoSync = req.NoSync && canSync
	owner, rec, ok, err := e.st.lookup(j.uri, j.rel)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	if !(ok && rec.Path == j.rel) && owner != "" && owner != j.uri {
		// Recorded under another spelling of the URI: that record is ours.
		if rec, ok, err = e.st.get(owner); err != nil {
			return fmt.Errorf("%w: %v", ErrState, err)
		}
	}
	mine := ok && rec.Path == j.rel && !j.foreign
	if j.forced {
		// --force: over the version kept as KEY.resourcesync-old only.
		req.IfVersion = j.keptVersion
		return nil
	}
	if !mine && owner == "" && !j.foreign && !j.checkLocal {
		// The plan found nothing there: a new object, which must still
		// find nothing (no request to look again; a bucket's HEAD costs).
		req.NoReplace = true
		return nil
	}
	in, err := e.tg.Stat(p.ctx, j.rel)
	if errors.Is(err, storage.ErrNotExist) {
		req.NoReplace = true
		return nil
	}
	if err != nil {
		return toFS(err)
	}
	if mine && e.unchangedInfo(objectInfo{in}, &rec) || j.foreign && e.crashed {
		req.IfVersion = in.Version
		return nil
	}
	why := "was not written by resourcesync"
	if mine {
		why = "was changed here after it was installed"
	}
	return fmt.Errorf("%w: %s is here already and %s: not overwritten (move it away to mirror the Source's)", ErrNotOwned, j.rel, why)
}

// emptyAtStart reports whether this run may skip looking at the Target
// before each write (emptyTarget): a run that writes, into a Target that
// lists no object, with a state that records none: a first baseline
// into an empty prefix. One listing replaces a Stat (a bucket's HEAD)
// per entry.
func (e *engine) emptyAtStart(ctx context.Context) (bool, error) {
	if e.tg == nil || e.st.readOnly || e.opt.Mode == ModeAudit {
		return false, nil
	}
	recorded := false
	if err := e.st.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketRes); b != nil {
			k, _ := b.Cursor().First()
			recorded = k != nil
		}
		return nil
	}); err != nil || recorded {
		return false, err
	}
	empty := true
	err := e.tg.List(ctx, "", func(storage.Info) error {
		empty = false
		return errStopList
	})
	if err != nil && !errors.Is(err, errStopList) {
		return false, toFS(err)
	}
	return empty, nil
}

var errStopList = errors.New("stop listing")

// madeThisRun reports whether r describes an object this very run wrote
// into a Target that was empty when it began (emptyTarget): its Version
// is the one its commit returned, and no Stat is needed to tell it is
// still ours. (An object changed since by someone else is found by the
// next run, as one changed after a Stat would be.)
func (e *engine) madeThisRun(r *Record) bool { return e.emptyTarget && r.Version != "" }

// unchangedInfo reports whether fi is the file r records as installed: a
// Target's object by the Version recorded, where there is one (an ETag
// tells what a length and an mtime may not), else by length and mtime.
func (e *engine) unchangedInfo(fi fs.FileInfo, r *Record) bool {
	if in, ok := fi.Sys().(storage.Info); ok && r.Version != "" {
		return in.Version == r.Version
	}
	return fi.Mode().IsRegular() && fi.Size() == r.Length && e.mtimeIs(fi.ModTime().UnixNano(), r.MTime)
}

// auditTargetExtras reports the Target's objects no set accounts for, as
// auditExtras does for a directory.
func (e *engine) auditTargetExtras(ctx context.Context, sr *SetReport) error {
	return e.tg.List(ctx, "", func(in storage.Info) error {
		if e.seen.has(in.Key) || e.excluded(in.Key) {
			return nil
		}
		if sr.Audit == nil {
			sr.Audit = map[string]int{}
		}
		sr.Audit[AuditExtra]++
		e.emit(Event{Kind: EventAudit, Set: sr.Set, Path: in.Key, Status: AuditExtra, Message: "not at the Source and not written by resourcesync: left alone"})
		return nil
	})
}

// cleanTarget removes what a killed run left staged in the Target, where
// staged objects can outlive their writer (a local directory's temporary
// files); a Target whose commits are single requests has none.
func (e *engine) cleanTarget() int {
	if c, ok := e.tg.(interface{ CleanTemp() (int, error) }); ok {
		n, _ := c.CleanTemp()
		return n
	}
	return 0
}

// StaleUploadAge is how old an unfinished upload in a Target (an S3
// multipart upload: invisible, but stored and billed) must be before a run
// aborts it as abandoned. A killed run leaves one; a day is far longer
// than any live upload of a resource takes, so another writer's upload in
// progress under the same prefix is never aborted.
const StaleUploadAge = 24 * time.Hour

// cleanUploads aborts the Target's unfinished uploads older than
// StaleUploadAge (a Target that has them: storage/s3), at the start of
// every run. A failure is logged and the run goes on: what is left costs
// storage, not correctness.
func (e *engine) cleanUploads(ctx context.Context) int {
	c, ok := e.tg.(interface {
		CleanupUploads(ctx context.Context, before time.Time) (int, error)
	})
	if !ok || e.opt.DryRun {
		return 0
	}
	n, err := c.CleanupUploads(ctx, e.opt.Now().Add(-StaleUploadAge))
	if err != nil {
		e.emit(Event{Kind: EventWarning, Message: "aborting abandoned uploads in " + e.tg.Location() + ": " + err.Error()})
	}
	return n
}

// destName names the mirror in reports: DEST, or the Target's location.
func (e *engine) destName() string {
	if e.tg != nil {
		return e.tg.Location()
	}
	return e.m.Root()
}
