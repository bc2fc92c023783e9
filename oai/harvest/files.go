package harvest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/casefold"
)

// change is one file of a page: a new version waiting in a temporary file
// beside it, or a removal (tmp "").
type change struct {
	rel, abs, tmp string
	mtime         time.Time
	existed       bool
	missed        bool // counted in shard.missed
	// recheck: an earlier page not yet renamed into place (of this
	// batch, or of the batch being committed) changes rel too, so
	// existed, read from the disk at staging, may be stale: the rename
	// looks again.
	recheck bool
}

// pageWriter stages a page's files so that they appear (and vanish) only
// when the page is complete: each changed record is written to a hidden
// temporary file in its directory (the Source ignores hidden files),
// made durable with the others at once, then renamed over the record.
//
// Creating a file costs far more than parsing a record, and file systems
// overlap creations in different directories, so a page's files are
// staged by a few workers while the parser goes on: each path goes to one
// worker (by its hash), so a record listed twice in a page is staged in
// order.
type pageWriter struct {
	dir     string
	shards  []*shard
	wg      sync.WaitGroup
	running bool
	// pending reports whether an earlier page whose files are not yet
	// renamed into place changes rel: the file on disk is not what it is
	// about to be, so a record equal to it is written all the same (the
	// earlier page's version would otherwise win) and a removal is
	// staged even if no file is there yet. nil: none.
	pending func(rel string) bool
	// fold is how Dir's file system compares names; where it folds, a
	// record whose file would reach another record's (its name differs
	// only in case) is refused: collide reports it, and collided counts.
	fold     casefold.Folding
	collide  func(rel, other string)
	collided atomic.Int64
	unstaged atomic.Int64 // of them, staged (counted written) and refused at the rename
}

const stagers = 4

// shardSeed places each path in the same shard of every page (one seed
// for the process): the pages of a batch are renamed shard by shard, and
// a path changed by two of them must meet itself in one shard.
var shardSeed = maphash.MakeSeed()

// tmpPrefix starts the names of staged files (hidden: the Source skips
// them; New removes those a killed harvest left).
const tmpPrefix = ".tmp-"

type shard struct {
	w       *pageWriter
	jobs    chan job
	made    map[string]bool // directories known to exist
	changes []change
	byRel   map[string]int
	byKey   map[string]string // folded name → the path staged with it (only where names fold)
	buf     []byte
	written int
	bytes   int64 // staged
	same    int
	missed  int // changes staged for jobs marked missed
	err     error
}

type job struct {
	rel    string
	b      []byte
	mtime  time.Time
	remove bool
	missed bool // a full pass's change the incremental lists missed
}

func newPageWriter(dir string, fold casefold.Folding, collide func(rel, other string), pending func(rel string) bool) *pageWriter {
	w := &pageWriter{dir: dir, fold: fold, collide: collide, pending: pending}
	for range stagers {
		w.shards = append(w.shards, &shard{w: w, made: map[string]bool{}, byRel: map[string]int{}, byKey: map[string]string{}})
	}
	return w
}

func (w *pageWriter) send(j job) {
	if !w.running {
		w.running = true
		for _, s := range w.shards {
			s.jobs = make(chan job, 64)
			w.wg.Add(1)
			go func() {
				defer w.wg.Done()
				for j := range s.jobs {
					if s.err == nil {
						s.err = s.do(j)
					}
				}
			}()
		}
	}
	// By the folded name: two paths that name one file are staged by
	// one worker, in order.
	w.shards[shardOf(w.fold, j.rel)].jobs <- j
}

func shardOf(fold casefold.Folding, rel string) uint64 {
	return maphash.String(shardSeed, fold.Key(rel)) % stagers
}

// put stages b as the content of rel, unless the file has these bytes
// already. missed marks a change the incremental lists missed (counted by
// missed if the file changes).
func (w *pageWriter) put(rel string, b []byte, mtime time.Time, missed bool) {
	w.send(job{rel: rel, b: b, mtime: mtime, missed: missed})
}

// remove stages the removal of rel, if it exists.
func (w *pageWriter) remove(rel string, missed bool) {
	w.send(job{rel: rel, remove: true, missed: missed})
}

// missed returns how many of the staged changes were marked missed; and
// creations how many create a record file. Both after wait.
func (w *pageWriter) missed() int {
	n := 0
	for _, s := range w.shards {
		n += s.missed
	}
	return n
}

func (w *pageWriter) creations() int {
	if _, _, err := w.wait(); err != nil {
		return 0
	}
	n := 0
	for _, s := range w.shards {
		for _, c := range s.changes {
			if c.rel != "" && c.tmp != "" && !c.existed {
				n++
			}
		}
	}
	return n
}

// wait lets the workers finish the page's staging and returns how many
// files it staged and found unchanged, and the first failure.
func (w *pageWriter) wait() (written, unchanged int, err error) {
	if w.running {
		for _, s := range w.shards {
			close(s.jobs)
		}
		w.wg.Wait()
		w.running = false
	}
	for _, s := range w.shards {
		written += s.written
		unchanged += s.same
		if err == nil {
			err = s.err
		}
	}
	return written, unchanged, err
}

func (s *shard) do(j job) error {
	s.drop(j.rel)
	abs := filepath.Join(s.w.dir, filepath.FromSlash(j.rel))
	pending := s.w.pending != nil && s.w.pending(j.rel)
	if j.remove {
		if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
			if !pending {
				return nil
			}
			// An earlier page creates it: the removal must follow.
			if err := s.w.ownDirs(filepath.Dir(abs)); err != nil {
				return err
			}
			s.byRel[j.rel] = len(s.changes)
			s.changes = append(s.changes, change{rel: j.rel, abs: abs, existed: true, missed: j.missed, recheck: true})
			if j.missed {
				s.missed++
			}
			return nil
		} else if err != nil {
			return err
		}
		if other, err := s.w.otherSpelling(abs); err != nil || other != "" {
			return err // another record's file: this one has none to remove
		}
		if err := s.w.ownDirs(filepath.Dir(abs)); err != nil {
			return err
		}
		s.byRel[j.rel] = len(s.changes)
		s.changes = append(s.changes, change{rel: j.rel, abs: abs, existed: true, missed: j.missed, recheck: pending})
		if j.missed {
			s.missed++
		}
		return nil
	}
	var key string
	if s.w.fold.Folds() {
		key = s.w.fold.Key(j.rel)
		if other, ok := s.byKey[key]; ok && other != j.rel {
			s.w.refuse(j.rel, other)
			return nil
		}
	}
	existed, same, err := s.compare(abs, j.b)
	if err != nil {
		return err
	}
	if existed && !same {
		// Only before writing: a file there with these very bytes is
		// left alone whoever's it is, and the directory is not read for
		// every unchanged record of a long harvest.
		if other, err := s.w.otherSpelling(abs); err != nil {
			return err
		} else if other != "" {
			s.w.refuse(j.rel, path.Join(path.Dir(j.rel), other))
			return nil
		}
	}
	if key != "" {
		s.byKey[key] = j.rel // accepted: a later spelling in this page is refused
	}
	if same && !pending {
		s.same++
		return nil
	}
	d := filepath.Dir(abs)
	if !s.made[d] {
		if err := os.MkdirAll(d, 0o777); err != nil {
			return err
		}
		if err := s.w.ownDirs(d); err != nil {
			return err
		}
		s.made[d] = true
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(d, tmpPrefix+hex.EncodeToString(rnd[:]))
	// 0666 through the umask, as any file a program creates.
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	_, err = f.Write(j.b)
	if err == nil {
		err = syncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chtimes(tmp, j.mtime, j.mtime)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	s.byRel[j.rel] = len(s.changes)
	s.changes = append(s.changes, change{rel: j.rel, abs: abs, tmp: tmp, mtime: j.mtime, existed: existed, missed: j.missed, recheck: pending})
	s.written++
	s.bytes += int64(len(j.b))
	if j.missed {
		s.missed++
	}
	return nil
}

// ownDirs checks that the record directories down to d (PREFIX and
// PREFIX/HH) are directories, not symbolic links: they are the
// harvester's own, and a link planted there would take its writes and
// removals outside Dir.
func (w *pageWriter) ownDirs(d string) error {
	for p := d; len(p) > len(w.dir); p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is a symbolic link (or not a directory): refusing to write through it", p)
		}
	}
	return nil
}

// drop forgets an earlier change of rel in this page (a record listed
// twice).
func (s *shard) drop(rel string) {
	if i, ok := s.byRel[rel]; ok {
		if c := &s.changes[i]; c.tmp != "" {
			os.Remove(c.tmp)
			s.written--
		}
		if s.changes[i].missed {
			s.missed--
		}
		s.changes[i] = change{}
		delete(s.byRel, rel)
	}
}

// compare reports whether abs exists and whether it holds exactly b.
func (s *shard) compare(abs string, b []byte) (existed, same bool, err error) {
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
	if cap(s.buf) < len(b)+1 {
		s.buf = make([]byte, len(b)+1)
	}
	n, err := io.ReadFull(f, s.buf[:len(b)+1])
	if err != nil && err != io.ErrUnexpectedEOF {
		return true, false, err
	}
	return true, n == len(b) && bytes.Equal(s.buf[:n], b), nil
}

// abort removes the staged files.
func (w *pageWriter) abort() {
	w.wait()
	for _, s := range w.shards {
		for _, c := range s.changes {
			if c.tmp != "" {
				os.Remove(c.tmp)
			}
		}
	}
	w.reset()
}

func (w *pageWriter) reset() {
	for _, s := range w.shards {
		s.changes = s.changes[:0]
		clear(s.byRel)
		clear(s.byKey)
		s.written, s.same, s.missed, s.err, s.bytes = 0, 0, 0, nil, 0
	}
}

// planned returns the paths the staged page will change: every file it
// will rename into place or remove.
func (w *pageWriter) planned() []string {
	if _, _, err := w.wait(); err != nil {
		return nil
	}
	var out []string
	for _, s := range w.shards {
		for _, c := range s.changes {
			if c.rel != "" {
				out = append(out, c.rel)
			}
		}
	}
	return out
}

// changes counts the staged changes (after wait).
func (w *pageWriter) changes() int {
	n := 0
	for _, s := range w.shards {
		for _, c := range s.changes {
			if c.rel != "" {
				n++
			}
		}
	}
	return n
}

// staged returns the bytes of the staged files (after wait).
func (w *pageWriter) staged() int64 {
	var n int64
	for _, s := range w.shards {
		n += s.bytes
	}
	return n
}

// renamed is what the renames of a batch's pages did.
type renamed struct {
	paths            []string
	created, removed int
	dirs             map[string]bool // holding a renamed or removed file
}

// rename moves the staged changes into place (their contents made durable
// before, their directories after, by the caller, once for a batch of
// pages). touched, one map per shard, holds whether each path changed by
// an earlier page of the batch now exists: a page staged before the
// earlier one was renamed read a stale existed, and the batch counts a
// record file it creates once. On a failure the page's remaining staged
// files are removed, and what was renamed is returned with the error.
func (w *pageWriter) rename(touched *[stagers]map[string]bool, out *renamed) error {
	if _, _, err := w.wait(); err != nil {
		w.abort()
		return err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	for si, s := range w.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ps []string
			var cr, rm int
			var err error
			d := map[string]bool{}
			seen := touched[si]
			for _, c := range s.changes {
				if c.rel == "" {
					continue
				}
				if err != nil {
					if c.tmp != "" {
						os.Remove(c.tmp)
					}
					continue
				}
				existed, known := seen[c.rel]
				if !known {
					existed = c.existed
					if c.recheck {
						_, lerr := os.Lstat(c.abs)
						existed = lerr == nil
					}
				}
				if c.tmp != "" && !existed && w.fold.Folds() {
					// Staged while the page before was committed: that
					// page may have made a file of another spelling.
					var other string
					if _, lerr := os.Lstat(c.abs); lerr == nil {
						other, err = w.otherSpelling(c.abs)
					}
					if err == nil && other != "" {
						os.Remove(c.tmp)
						w.unstaged.Add(1)
						w.refuse(c.rel, path.Join(path.Dir(c.rel), other))
						continue
					}
				}
				if err != nil {
					os.Remove(c.tmp)
					continue
				}
				if c.tmp != "" {
					err = os.Rename(c.tmp, c.abs)
					if err == nil && !existed {
						cr++
					}
				} else {
					err = os.Remove(c.abs)
					if errors.Is(err, fs.ErrNotExist) {
						err = nil
					} else if err == nil {
						rm++
					}
				}
				if err != nil {
					if c.tmp != "" {
						os.Remove(c.tmp)
					}
					continue
				}
				seen[c.rel] = c.tmp != ""
				d[filepath.Dir(c.abs)] = true
				ps = append(ps, c.rel)
			}
			mu.Lock()
			defer mu.Unlock()
			out.paths = append(out.paths, ps...)
			out.created += cr
			out.removed += rm
			for k := range d {
				out.dirs[k] = true
			}
			if firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	w.reset()
	return firstErr
}

// otherSpelling returns the name of the file at abs when it is not abs's
// own but one whose name differs only in what Dir's file system folds
// (case): another record's. Asked only where a file was found and is to
// be replaced or removed, so the directory (a bucket: a few thousand
// names at a million records) is read once per changed record, and only
// where names fold.
func (w *pageWriter) otherSpelling(abs string) (string, error) {
	if !w.fold.Folds() {
		return "", nil
	}
	other, ok, err := w.fold.Other(filepath.Dir(abs), filepath.Base(abs))
	if err != nil || !ok {
		return "", err
	}
	return other, nil
}

// refuse reports that the record of rel is not written: its file would be
// other's, another record's.
func (w *pageWriter) refuse(rel, other string) {
	w.collided.Add(1)
	if w.collide != nil {
		w.collide(rel, other)
	}
}
