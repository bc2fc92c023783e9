package scan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/resourcesync-go/resourcesync/source/store"
)

// The merge walks the tree in the byte order of the slash-separated paths
// relative to the root, which is the order of the inventory, and pairs
// each file with its inventory record (or none) as both advance: a record
// the walk passes without finding its file is deleted. Listing a directory
// and sorting its entries, with a directory compared as name+"/" (so that
// "a.txt" < "a/b" < "a0", as the byte order of the paths has it), yields
// that order; nothing but the directories being walked (their entry
// lists) and a page of inventory records is held in memory.
type merge struct {
	s       *Scanner
	ctx     context.Context
	jobs    chan<- []job
	results chan<- []result
	st      *Stats
	chunk   []job
	// free holds chunks the workers are done with, for queue to reuse
	// (a chunk of 64 jobs is some 20 KB: allocating one per 64 files of a
	// first scan was a good part of its garbage).
	free chan []job
	n    int // entries listed, for checking ctx now and then
	buf  []byte
	// openDirs counts the directory descriptors open for the walk and
	// its jobs.
	openDirs atomic.Int32
}

// cursor reads inventory records in path order, one page at a time.
type cursor struct {
	next func() (store.Resource, error, bool)
	stop func()
	rec  store.Resource
	ok   bool // rec is valid
	err  error
}

func (m *merge) open(from, to string) *cursor {
	c := &cursor{}
	c.next, c.stop = iter.Pull2(m.s.opt.Store.ResourcesIn(m.ctx, from, to))
	c.load()
	return c
}

func (c *cursor) load() {
	r, err, ok := c.next()
	switch {
	case !ok:
		c.ok = false
	case err != nil:
		c.ok, c.err = false, err
	default:
		c.rec, c.ok = r, true
	}
}

func (c *cursor) close() { c.stop() }

// target scans one normalised path ("" is the whole tree).
func (m *merge) target(rel string) error {
	s := m.s
	if rel == "" {
		c := m.open("", "")
		defer c.close()
		if err := m.dir(c, s.root, ""); err != nil {
			return err
		}
		return m.rest(c)
	}
	if s.tooLong(rel) {
		m.st.Skipped++
		return nil
	}
	abs := filepath.Join(s.root, filepath.FromSlash(rel))
	kind, err := s.probe(rel, abs)
	if err != nil {
		m.st.Skipped++
		s.log.Warn("scan: cannot stat; left as it was", "path", rel, "err", err)
		return nil
	}
	prev, err := s.opt.Store.Get(m.ctx, rel)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return fmt.Errorf("scan: %w", err)
	case kind == kindFile: // compared below
	default:
		if err := m.remove(prev); err != nil {
			return err
		}
	}
	if kind == kindFile {
		j := job{rel: rel, abs: abs}
		if err == nil {
			j.prev, j.old = prev, true
		}
		if err := m.queue(j); err != nil {
			return err
		}
	}
	c := m.open(rel+"/", rel+"0") // '0' follows '/': exactly the paths under rel
	defer c.close()
	if kind == kindDir {
		if err := m.dir(c, abs, rel); err != nil {
			return err
		}
	}
	return m.rest(c)
}

type kind uint8

const (
	kindNone kind = iota // nothing the walk would publish
	kindFile
	kindDir
)

// probe says what rel is on disk, as the walk would see it: kindNone when
// it is missing, hidden, excluded, skipped, a symbolic link or another
// type, or under one of those.
func (s *Scanner) probe(rel, abs string) (kind, error) {
	parts := strings.Split(rel, "/")
	p := s.root
	for i, name := range parts {
		p = filepath.Join(p, name)
		r := strings.Join(parts[:i+1], "/")
		if strings.HasPrefix(name, ".") || s.exclude[p] || s.skipped(r, name) {
			return kindNone, nil
		}
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return kindNone, nil
		}
		if err != nil {
			return kindNone, err
		}
		switch t := fi.Mode().Type(); {
		case t.IsDir():
			if i == len(parts)-1 {
				return kindDir, nil
			}
		case t.IsRegular() && i == len(parts)-1:
			return kindFile, nil
		default:
			return kindNone, nil
		}
	}
	return kindNone, nil
}

// rest deletes the records the cursor has left: the walk of their range
// is complete.
func (m *merge) rest(c *cursor) error {
	for c.ok {
		if err := m.remove(c.rec); err != nil {
			return err
		}
		c.load()
	}
	return c.err
}

// upTo deletes the records before key and reports whether the next one is
// key itself.
func (m *merge) upTo(c *cursor, key string) (bool, error) {
	for c.ok && c.rec.Path < key {
		if err := m.remove(c.rec); err != nil {
			return false, err
		}
		c.load()
	}
	return c.ok && c.rec.Path == key, c.err
}

// protect passes over the records under prefix without deleting them.
func (m *merge) protect(c *cursor, prefix string) error {
	if _, err := m.upTo(c, prefix); err != nil {
		return err
	}
	for c.ok && strings.HasPrefix(c.rec.Path, prefix) {
		c.load()
	}
	return c.err
}

func (m *merge) remove(r store.Resource) error {
	select {
	case m.results <- []result{{job: job{rel: r.Path, prev: r, old: true}, out: vanished}}:
		return nil
	case <-m.ctx.Done():
		return m.ctx.Err()
	}
}

func (m *merge) queue(j job) error {
	if m.chunk == nil {
		select {
		case m.chunk = <-m.free:
		default:
			m.chunk = make([]job, 0, walkChunk)
		}
	}
	m.chunk = append(m.chunk, j)
	if len(m.chunk) == walkChunk {
		return m.send()
	}
	return nil
}

func (m *merge) send() error {
	if len(m.chunk) == 0 {
		return nil
	}
	select {
	case m.jobs <- m.chunk:
	case <-m.ctx.Done():
		for _, j := range m.chunk {
			j.done()
		}
		m.chunk = nil
		return m.ctx.Err()
	}
	m.chunk = nil
	return nil
}

// dir walks the directory abs (rel relative to the root, "" for the root)
// in path order. A directory that cannot be listed protects its records;
// only the root's listing error, ctx and the store's errors are returned.
func (m *merge) dir(c *cursor, abs, rel string) error {
	s := m.s
	d, err := openDir(abs, rel == "", &m.openDirs) // the root may be a symbolic link
	var ents *dirEntries
	if err == nil {
		if m.buf == nil {
			m.buf = make([]byte, 64<<10)
		}
		ents, err = d.list(m.buf)
		defer d.release()
	}
	if err != nil {
		if rel == "" {
			return fmt.Errorf("scan %s: %w", s.root, err)
		}
		m.st.Skipped++
		s.log.Warn("scan: cannot list directory; its files are left as they were", "path", rel, "err", err)
		return m.protect(c, rel+"/")
	}
	shared := d.shared()
	excluded := s.excludeIn[abs]
	prefix := ""
	if rel != "" {
		prefix = rel + "/"
	}
	for i := range ents.ents {
		if m.n++; m.n&1023 == 0 {
			if err := m.ctx.Err(); err != nil {
				return err
			}
		}
		e := &ents.ents[i]
		name := ents.name(e)
		r := prefix + name
		if strings.HasPrefix(name, ".") || excluded[name] || s.skipped(r, name) {
			continue
		}
		if s.tooLong(r) {
			m.st.Skipped++
			continue
		}
		switch t := e.typ; {
		case t.IsDir():
			if err := m.dir(c, joinPath(abs, name), r); err != nil {
				return err
			}
			continue
		case t&fs.ModeSymlink != 0:
			s.log.Debug("scan: symbolic link not followed", "path", r)
			continue
		case !t.IsRegular():
			s.log.Debug("scan: not a regular file", "path", r, "type", t.String())
			continue
		}
		j := job{rel: r}
		if shared {
			d.acquire()
			j.dir, j.name = d, name
		} else {
			j.abs = joinPath(abs, name)
		}
		known, err := m.upTo(c, r)
		if err != nil {
			return err
		}
		if known {
			j.prev, j.old = c.rec, true
			c.load()
		}
		if err := m.queue(j); err != nil {
			return err
		}
	}
	return nil
}

// dirEntries is one directory's listing: names in one buffer, sorted in
// path order.
type dirEntries struct {
	names string
	ents  []dent
}

type dent struct {
	off, n uint32
	typ    fs.FileMode
}

func (d *dirEntries) name(e *dent) string { return d.names[e.off : e.off+e.n] }

func (d *dirEntries) sort(names []byte) {
	d.names = string(names)
	slices.SortFunc(d.ents, func(a, b dent) int {
		return cmpEntry(d.name(&a), a.typ.IsDir(), d.name(&b), b.typ.IsDir())
	})
}

// cmpEntry compares two names as the paths under them sort: a directory's
// name as name+"/". Names never contain '/'.
func cmpEntry(a string, aDir bool, b string, bDir bool) int {
	n := min(len(a), len(b))
	if c := strings.Compare(a[:n], b[:n]); c != 0 {
		return c
	}
	next := func(s string, dir bool) int {
		if len(s) > n {
			return int(s[n])
		}
		if dir {
			return '/'
		}
		return -1
	}
	x, y := next(a, aDir), next(b, bDir)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	// Equal so far: either equal names, or one is the other plus "/...",
	// which only whole paths (cmpPath) have.
	return strings.Compare(a, b)
}

// tooLong reports (and logs) a path longer than the store holds (see
// store.PathLimiter): it is skipped, and a directory with all below it.
func (s *Scanner) tooLong(rel string) bool {
	if s.maxPath <= 0 || len(rel) <= s.maxPath {
		return false
	}
	s.log.Warn("scan: path too long for the store; skipped", "path", strings.ToValidUTF8(rel[:64], "")+"...", "bytes", len(rel), "max", s.maxPath)
	return true
}

// ErrEmptyRoot: see Options.RefuseEmptyRoot. A root that does not exist
// (or is not a directory) wraps it too, whatever RefuseEmptyRoot says.
var ErrEmptyRoot = errors.New("scan: the directory is empty")

// guardRoot refuses a scan that would journal the deletion of every one
// of the inventory's n resources: the root is missing (always), or holds
// no file the walk would publish (with RefuseEmptyRoot). It runs before
// anything is changed, for Scan and ScanPaths alike: the paths a
// filesystem event names after an unmount or an rm -r of the whole tree
// are all missing too.
func (s *Scanner) guardRoot(ctx context.Context, n int) error {
	fi, err := os.Stat(s.root)
	if err != nil || !fi.IsDir() {
		why := "is not a directory"
		if err != nil {
			why = "cannot be read (" + err.Error() + ")"
			if errors.Is(err, fs.ErrNotExist) {
				why = "does not exist"
			}
		}
		return fmt.Errorf("%w: %s %s while the inventory holds %d resources: unmounted, renamed or removed? Refusing to journal the deletion of every resource", ErrEmptyRoot, s.root, why, n)
	}
	if !s.opt.RefuseEmptyRoot {
		return nil
	}
	found, err := s.hasFile(ctx, s.root, "", true)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%w: %s holds no file while the inventory holds %d resources: not mounted, or emptied? Refusing to journal the deletion of every resource", ErrEmptyRoot, s.root, n)
	}
	return nil
}

// hasFile reports whether the tree at abs holds a file the walk would
// publish. It stops at the first one, reading directories in chunks and
// unsorted: on a collection it costs a listing chunk or two. A directory
// that cannot be listed counts as holding one (the walk leaves its
// records as they are).
func (s *Scanner) hasFile(ctx context.Context, abs, rel string, root bool) (bool, error) {
	f, err := os.Open(abs)
	if err != nil {
		return true, nil
	}
	defer f.Close()
	excluded := s.excludeIn[abs]
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		ents, err := f.ReadDir(256)
		var dirs []string
		for _, e := range ents {
			name := e.Name()
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			if strings.HasPrefix(name, ".") || excluded[name] || s.skipped(r, name) {
				continue
			}
			switch t := e.Type(); {
			case t.IsRegular():
				return true, nil
			case t.IsDir():
				dirs = append(dirs, name)
			}
		}
		for _, name := range dirs {
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			if ok, err := s.hasFile(ctx, joinPath(abs, name), r, false); ok || err != nil {
				return ok, err
			}
		}
		if err != nil { // io.EOF, or a listing that failed part way
			return !errors.Is(err, io.EOF), nil
		}
	}
}
