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
	"path/filepath"
	"sync"
	"time"
)

// change is one file of a page: a new version waiting in a temporary file
// beside it, or a removal (tmp "").
type change struct {
	rel, abs, tmp string
	mtime         time.Time
	existed       bool
	missed        bool // counted in shard.missed
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
	seed    maphash.Seed
	wg      sync.WaitGroup
	running bool
}

const stagers = 4

// tmpPrefix starts the names of staged files (hidden: the Source skips
// them; New removes those a killed harvest left).
const tmpPrefix = ".tmp-"

type shard struct {
	w       *pageWriter
	jobs    chan job
	made    map[string]bool // directories known to exist
	changes []change
	byRel   map[string]int
	buf     []byte
	written int
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

func newPageWriter(dir string) *pageWriter {
	w := &pageWriter{dir: dir, seed: maphash.MakeSeed()}
	for range stagers {
		w.shards = append(w.shards, &shard{w: w, made: map[string]bool{}, byRel: map[string]int{}})
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
	w.shards[maphash.String(w.seed, j.rel)%stagers].jobs <- j
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
	if j.remove {
		if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		if err := s.w.ownDirs(filepath.Dir(abs)); err != nil {
			return err
		}
		s.byRel[j.rel] = len(s.changes)
		s.changes = append(s.changes, change{rel: j.rel, abs: abs, existed: true, missed: j.missed})
		if j.missed {
			s.missed++
		}
		return nil
	}
	existed, same, err := s.compare(abs, j.b)
	if err != nil {
		return err
	}
	if same {
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
	s.changes = append(s.changes, change{rel: j.rel, abs: abs, tmp: tmp, mtime: j.mtime, existed: existed, missed: j.missed})
	s.written++
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
		s.written, s.same, s.missed, s.err = 0, 0, 0, nil
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

// commit makes the staged changes durable and visible, and returns the
// paths changed and how many record files it created and removed.
func (w *pageWriter) commit() (paths []string, created, removed int, err error) {
	if _, _, err := w.wait(); err != nil {
		w.abort()
		return nil, 0, 0, err
	}
	n := 0
	for _, s := range w.shards {
		n += len(s.changes)
	}
	if n == 0 {
		w.reset()
		return nil, 0, 0, nil
	}
	// The new contents reach the disk before any rename does.
	if err := syncData(w.dir); err != nil {
		w.abort()
		return nil, 0, 0, err
	}
	var mu sync.Mutex
	dirs := map[string]bool{}
	var wg sync.WaitGroup
	var firstErr error
	for _, s := range w.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ps []string
			var cr, rm int
			var err error
			d := map[string]bool{}
			for i, c := range s.changes {
				if c.rel == "" {
					continue
				}
				if err != nil {
					if c.tmp != "" {
						os.Remove(c.tmp)
					}
					continue
				}
				if c.tmp != "" {
					err = os.Rename(c.tmp, c.abs)
					if err == nil && !c.existed {
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
					_ = i
					continue
				}
				d[filepath.Dir(c.abs)] = true
				ps = append(ps, c.rel)
			}
			mu.Lock()
			defer mu.Unlock()
			paths = append(paths, ps...)
			created += cr
			removed += rm
			for k := range d {
				dirs[k] = true
			}
			if firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	w.reset()
	if firstErr != nil {
		// What was renamed is in place; the page is harvested again
		// and finds those files unchanged, so report them too.
		return paths, created, removed, firstErr
	}
	return paths, created, removed, syncDirs(w.dir, dirs)
}
