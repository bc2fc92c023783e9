package destination

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/storage"
)

// ForceSuffix is appended to the name of a file Options.Force replaces:
// what was there is kept as NAME.resourcesync-old.
const ForceSuffix = ".resourcesync-old"

// errOldTaken: NAME.resourcesync-old is another file already; the file at
// NAME is not replaced, so that neither is lost.
var errOldTaken = errors.New("taken")

// KeepOld for a local DEST: the file gets the second name
// NAME.resourcesync-old (a hard link), so that the install's rename
// replaces NAME atomically and a failed download leaves NAME as it was
// (undo removes the second name). The link is made durable before the
// install (an fsync of the directory): after a crash the user's bytes
// are under one of the two names, and a name left by a killed run is
// taken as done (fetch.Dir.Link). Where the file system has no hard
// links (FAT), the file is moved instead, and moved back by undo when
// nothing took its place.
func (d localDir) KeepOld(abs string) (string, func(), error) {
	old := abs + ForceSuffix
	err := d.Dir.Link(abs, old)
	undo := func() { d.Dir.Remove(old) }
	switch {
	case errors.Is(err, fs.ErrExist):
		return "", nil, errOldTaken
	case errors.Is(err, fetch.ErrSymlinkInDest), errors.Is(err, fs.ErrNotExist), errors.Is(err, fetch.ErrOutsideDir):
		return "", nil, err
	case err != nil:
		if err := d.Dir.Rename(abs, old); errors.Is(err, fs.ErrExist) {
			return "", nil, errOldTaken
		} else if err != nil {
			return "", nil, err
		}
		undo = func() {
			if _, err := d.Dir.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
				d.Dir.Rename(old, abs)
			}
		}
	}
	if err := syncDir(filepath.Dir(abs)); err != nil {
		undo()
		return "", nil, fmt.Errorf("fsync %s: %w", filepath.Dir(abs), err)
	}
	return "", undo, nil
}

// KeepOld for a Target: the object is copied to KEY.resourcesync-old
// (only where nothing is: a bucket has no rename; a copy of the same
// bytes there, left by a run killed before its install, is taken as
// done), streamed; the version copied is returned, and the install
// overwrites only that version (IfVersion), so that an object changed in
// between is not lost either. undo removes the copy this run made.
func (d *targetDir) KeepOld(abs string) (string, func(), error) {
	key, err := d.key(abs)
	if err != nil {
		return "", nil, err
	}
	old := key + ForceSuffix
	r, in, err := d.tg.Open(d.ctx, key)
	if err != nil {
		return "", nil, toFS(err)
	}
	defer r.Close()
	w, err := d.tg.Create(d.ctx, old, storage.PutOptions{Size: in.Size, ModTime: in.ModTime, ContentType: in.ContentType, NoReplace: true})
	if err != nil {
		return "", nil, toFS(err)
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Abort()
		return "", nil, fmt.Errorf("copying %s to %s: %w", key, old, err)
	}
	kept, err := w.Commit(d.ctx)
	if errors.Is(err, storage.ErrExists) {
		if d.sameBytes(key, in.Version, old) {
			// The copy of a run killed before its install: done, as a
			// second name of the same file is in a directory. Left in
			// place whatever happens next: it is the object's bytes.
			return in.Version, func() {}, nil
		}
		return "", nil, errOldTaken
	}
	if err != nil {
		return "", nil, fmt.Errorf("copying %s to %s: %w", key, old, toFS(err))
	}
	return in.Version, func() { d.tg.Remove(context.WithoutCancel(d.ctx), old, kept.Version) }, nil
}

// sameBytes reports whether the object at old holds the bytes of the
// object at key, still at version (compared streaming, in bounded
// memory).
func (d *targetDir) sameBytes(key, version, old string) bool {
	a, ai, err := d.tg.Open(d.ctx, key)
	if err != nil {
		return false
	}
	defer a.Close()
	b, bi, err := d.tg.Open(d.ctx, old)
	if err != nil {
		return false
	}
	defer b.Close()
	if ai.Version != version || ai.Size != bi.Size {
		return false
	}
	ba, bb := make([]byte, 32<<10), make([]byte, 32<<10)
	for {
		n, errA := io.ReadFull(a, ba)
		m, errB := io.ReadFull(b, bb)
		if n != m || !bytes.Equal(ba[:n], bb[:m]) {
			return false
		}
		endA := errA == io.EOF || errA == io.ErrUnexpectedEOF
		endB := errB == io.EOF || errB == io.ErrUnexpectedEOF
		if endA || endB {
			return endA && endB
		}
		if errA != nil || errB != nil {
			return false
		}
	}
}

// oldTaken reports whether abs+ForceSuffix holds something other than
// the file at abs, which makes --force refuse the resource: for a dry
// run to say so. Not taken: a second name of the same file (a local
// DEST's hard link, left by a killed run), or, in a Target, an object of
// the same size and version (the copy a killed run made; what the real
// run compares byte for byte).
func (p *pass) oldTaken(abs string) bool {
	if p.e.dir == nil {
		return false
	}
	old, err := p.e.dir.Lstat(abs + ForceSuffix)
	if err != nil {
		return false
	}
	if d, ok := p.e.dir.(localDir); ok {
		return !d.Dir.SameFile(abs, abs+ForceSuffix)
	}
	cur, err := p.e.dir.Lstat(abs)
	if err != nil {
		return true
	}
	a, aok := cur.Sys().(storage.Info)
	b, bok := old.Sys().(storage.Info)
	return !aok || !bok || a.Size != b.Size || a.Version == "" || a.Version != b.Version
}

// keepOld keeps the file at j's path that Options.Force replaces (see
// the KeepOld methods); the error, a failure of that resource, says why
// it is not replaced.
func (p *pass) keepOld(j *job, abs string) (func(), error) {
	if p.e.dir == nil {
		return nil, fmt.Errorf("%w: %s is here already and differs from the Source's: no mirror to keep it in", ErrNotOwned, j.rel)
	}
	v, undo, err := p.e.dir.KeepOld(abs)
	if errors.Is(err, errOldTaken) {
		return nil, fmt.Errorf("%w: %s is here already and differs from the Source's, and %s%s is taken too: not replaced with --force (move one of them away)", ErrNotOwned, j.rel, j.rel, ForceSuffix)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s is here already and differs from the Source's; it could not be kept as %s%s, so it is not replaced: %w", ErrNotOwned, j.rel, j.rel, ForceSuffix, err)
	}
	j.forced, j.keptVersion = true, v
	return undo, nil
}
