package harvest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// change is one file of a page: a new version waiting in a temporary file
// beside it, or a removal (tmp "").
type change struct {
	rel, abs, tmp string
	mtime         time.Time
	existed       bool
}

// pageWriter stages a page's files so that they appear (and vanish) only
// when the page is complete: each changed record is written to a hidden
// temporary file in its directory (the Source ignores hidden files),
// made durable with the others at once, then renamed over the record.
type pageWriter struct {
	dir     string
	made    map[string]bool // directories known to exist
	changes []change
	byRel   map[string]int
	buf     []byte
}

func newPageWriter(dir string) *pageWriter {
	return &pageWriter{dir: dir, made: map[string]bool{}, byRel: map[string]int{}}
}

// drop forgets an earlier change of rel in this page (a record listed
// twice).
func (w *pageWriter) drop(rel string) {
	if i, ok := w.byRel[rel]; ok {
		if c := &w.changes[i]; c.tmp != "" {
			os.Remove(c.tmp)
		}
		w.changes[i] = change{}
		delete(w.byRel, rel)
	}
}

// put stages b as the content of rel, unless the file has these bytes
// already; it reports whether it staged a change.
func (w *pageWriter) put(rel string, b []byte, mtime time.Time) (bool, error) {
	w.drop(rel)
	abs := filepath.Join(w.dir, filepath.FromSlash(rel))
	existed, same, err := w.same(abs, b)
	if err != nil || same {
		return false, err
	}
	d := filepath.Dir(abs)
	if !w.made[d] {
		if err := os.MkdirAll(d, 0o777); err != nil {
			return false, err
		}
		w.made[d] = true
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(d, ".tmp-"+hex.EncodeToString(rnd[:]))
	// 0666 through the umask, as any file a program creates.
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return false, err
	}
	_, err = f.Write(b)
	if err == nil {
		err = syncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chtimes(tmp, mtime, mtime)
	}
	if err != nil {
		os.Remove(tmp)
		return false, err
	}
	w.byRel[rel] = len(w.changes)
	w.changes = append(w.changes, change{rel: rel, abs: abs, tmp: tmp, mtime: mtime, existed: existed})
	return true, nil
}

// same reports whether abs exists and whether it holds exactly b.
func (w *pageWriter) same(abs string, b []byte) (existed, same bool, err error) {
	f, err := os.Open(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return true, false, err
	}
	if !fi.Mode().IsRegular() {
		return true, false, errors.New(abs + ": not a regular file")
	}
	if fi.Size() != int64(len(b)) {
		return true, false, nil
	}
	if cap(w.buf) < len(b)+1 {
		w.buf = make([]byte, len(b)+1)
	}
	n, err := io.ReadFull(f, w.buf[:len(b)+1])
	if err != nil && err != io.ErrUnexpectedEOF {
		return true, false, err
	}
	return true, n == len(b) && bytes.Equal(w.buf[:n], b), nil
}

// remove stages the removal of rel; it reports whether the file exists.
func (w *pageWriter) remove(rel string) (bool, error) {
	w.drop(rel)
	abs := filepath.Join(w.dir, filepath.FromSlash(rel))
	if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	w.byRel[rel] = len(w.changes)
	w.changes = append(w.changes, change{rel: rel, abs: abs, existed: true})
	return true, nil
}

// abort removes the staged files.
func (w *pageWriter) abort() {
	for _, c := range w.changes {
		if c.tmp != "" {
			os.Remove(c.tmp)
		}
	}
	w.reset()
}

func (w *pageWriter) reset() {
	w.changes = w.changes[:0]
	clear(w.byRel)
}

// commit makes the staged changes durable and visible, and returns the
// paths changed and how many record files it created and removed.
func (w *pageWriter) commit() (paths []string, created, removed int, err error) {
	if len(w.changes) == 0 {
		return nil, 0, 0, nil
	}
	// The new contents reach the disk before any rename does.
	if err := syncData(w.dir); err != nil {
		w.abort()
		return nil, 0, 0, err
	}
	dirs := map[string]bool{}
	for i, c := range w.changes {
		if c.rel == "" {
			continue
		}
		if c.tmp != "" {
			err = os.Rename(c.tmp, c.abs)
			if err == nil && !c.existed {
				created++
			}
		} else {
			err = os.Remove(c.abs)
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			} else if err == nil {
				removed++
			}
		}
		if err != nil {
			for _, c := range w.changes[i:] {
				if c.tmp != "" {
					os.Remove(c.tmp)
				}
			}
			w.reset()
			return nil, 0, 0, err
		}
		dirs[filepath.Dir(c.abs)] = true
		paths = append(paths, c.rel)
	}
	w.reset()
	return paths, created, removed, syncDirs(w.dir, dirs)
}
