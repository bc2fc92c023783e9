package scan

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/store"
	"github.com/resourcesync-go/resourcesync/rs"
)

// RacyWindow is how recent an mtime must be, relative to the moment a file
// is read, for the scanner to distrust it next time (see the package
// documentation). Filesystem timestamps are taken from a coarse clock
// (a few milliseconds on Linux); the window covers that generously.
const RacyWindow = 100 * time.Millisecond

// ErrSkipPattern is matched by the error New returns for a malformed
// skip pattern.
var ErrSkipPattern = errors.New("scan: bad skip pattern")

// Options configure a Scanner.
type Options struct {
	Root  string      // directory to scan
	Store store.Store // inventory and journal

	// Exclude lists paths (absolute, or relative to the working
	// directory) that are not scanned, such as the state directory.
	Exclude []string
	// Skip lists path.Match patterns. A file or directory is skipped when
	// a pattern matches its slash-separated path relative to Root or its
	// name alone ("*.tmp", "cache", "logs/2024-*").
	Skip []string

	Workers   int // hashing workers; default runtime.NumCPU()
	BatchSize int // changes and touches per store transaction; default 10,000

	Logger *slog.Logger                   // default slog.Default()
	Now    func() time.Time               // clock for change datetimes; default time.Now
	Open   func(string) (*os.File, error) // opens a file to hash; default os.Open (fault injection in tests)
}

// Stats counts what one Scan did.
type Stats struct {
	Files     int   // regular files found by the walk (not skipped)
	Unchanged int   // files whose stat fields matched the inventory (not read)
	Hashed    int   // files read and hashed
	Bytes     int64 // bytes hashed
	Created   int
	Updated   int
	Deleted   int
	Touched   int // stat fields refreshed, content unchanged
	Skipped   int // files or directories left as they were because of an error
	Batches   int // store transactions committed
}

// Scanner scans one directory into one store.
type Scanner struct {
	opt        Options
	root       string
	exclude    map[string]bool
	mu         sync.Mutex // one scan at a time
	log        *slog.Logger
	beforeHash func(rel string) // test hook: runs in the worker before a file is read
}

// New returns a Scanner for opt.
func New(opt Options) (*Scanner, error) {
	if opt.Store == nil {
		return nil, errors.New("scan: no store")
	}
	root, err := filepath.Abs(opt.Root)
	if err != nil {
		return nil, fmt.Errorf("scan: root: %w", err)
	}
	for _, p := range opt.Skip {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("%w %q: %w", ErrSkipPattern, p, err)
		}
	}
	s := &Scanner{opt: opt, root: root, exclude: map[string]bool{}, log: opt.Logger}
	for _, e := range opt.Exclude {
		a, err := filepath.Abs(e)
		if err != nil {
			return nil, fmt.Errorf("scan: exclude %q: %w", e, err)
		}
		s.exclude[a] = true
	}
	if s.opt.Workers <= 0 {
		s.opt.Workers = runtime.NumCPU()
	}
	if s.opt.BatchSize <= 0 {
		s.opt.BatchSize = 10000
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.opt.Now == nil {
		s.opt.Now = time.Now
	}
	if s.opt.Open == nil {
		s.opt.Open = os.Open
	}
	return s, nil
}

// statKey is what a rescan compares.
type statKey struct {
	size  int64
	mtime time.Time
	ino   uint64
}

func (a statKey) equal(b statKey) bool {
	return a.size == b.size && a.ino == b.ino && a.mtime.Equal(b.mtime)
}

func statOf(fi fs.FileInfo) statKey {
	return statKey{size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi)}
}

// entry is an inventory record during a scan.
type entry struct {
	res  store.Resource
	seen bool // found by the walk, or protected from deletion
}

type job struct {
	rel  string
	abs  string
	st   statKey
	prev *store.Resource // nil for a new file
}

type outcome uint8

const (
	okHashed outcome = iota
	vanished         // gone before or while reading
	failed           // unreadable or kept changing: leave as it was
)

type result struct {
	job
	out outcome
	res store.Resource // for okHashed
}

// Scan walks the directory once and applies the differences with the
// inventory to the store (see the package documentation). It returns the
// first error that stops it: the root cannot be walked, ctx is done, or the
// store fails. Problems with single files are logged and counted in
// Stats.Skipped, not returned.
func (s *Scanner) Scan(ctx context.Context) (Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st Stats

	// The inventory, in one read transaction.
	var entries []entry
	for r, err := range s.opt.Store.Resources(ctx) {
		if err != nil {
			return st, fmt.Errorf("scan: loading the inventory: %w", err)
		}
		entries = append(entries, entry{res: r})
	}
	index := make(map[string]int, len(entries))
	for i := range entries {
		index[entries[i].res.Path] = i
	}
	ss, err := s.opt.Store.Stats(ctx)
	if err != nil {
		return st, fmt.Errorf("scan: %w", err)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan job, 256)
	results := make(chan result, 256)
	var workers sync.WaitGroup
	for range s.opt.Workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			buf := make([]byte, 256<<10)
			for j := range jobs {
				r := s.hash(ctx, j, buf)
				select {
				case results <- r:
				case <-ctx.Done():
				}
			}
		}()
	}

	// The applier commits batches while the walk and the hashing go on.
	ap := &applier{s: s, st: &st, last: ss.LastTime}
	applied := make(chan error, 1)
	go func() {
		var err error
		for r := range results {
			if err != nil {
				continue // drain
			}
			if err = ap.add(ctx, r); err != nil {
				cancel(err)
			}
		}
		applied <- err
	}()

	werr := s.walk(ctx, entries, index, jobs, &st)
	close(jobs)
	workers.Wait()
	close(results)
	aerr := <-applied
	if aerr != nil {
		return st, aerr
	}
	if werr != nil {
		if c := context.Cause(ctx); c != nil && errors.Is(werr, context.Canceled) {
			werr = c
		}
		return st, werr
	}
	if err := ctx.Err(); err != nil {
		return st, context.Cause(ctx)
	}

	// Deletes: inventory paths neither found nor protected, in path order.
	for i := range entries {
		if e := &entries[i]; !e.seen {
			if err := ap.change(ctx, rs.Deleted, e.res); err != nil {
				return st, err
			}
		}
	}
	return st, ap.flush(ctx)
}

// walk runs the directory walk, marking inventory entries seen and sending
// files that need reading to jobs.
func (s *Scanner) walk(ctx context.Context, entries []entry, index map[string]int, jobs chan<- job, st *Stats) error {
	var protected []string // prefixes ("dir/") of directories that could not be listed
	n := 0
	prefix := len(s.root) + 1
	if strings.HasSuffix(s.root, string(filepath.Separator)) {
		prefix--
	}
	err := filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if n++; n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if p == s.root {
			return err // the root itself must be readable
		}
		rel := filepath.ToSlash(p[prefix:])
		if err != nil {
			st.Skipped++
			if d != nil && d.IsDir() {
				s.log.Warn("scan: cannot list directory; its files are left as they were", "path", rel, "err", err)
				protected = append(protected, rel+"/")
				return nil
			}
			s.log.Warn("scan: cannot stat; left as it was", "path", rel, "err", err)
			s.protect(entries, index, rel)
			return nil
		}
		name := d.Name()
		if strings.HasPrefix(name, ".") || s.exclude[p] || s.skipped(rel, name) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch t := d.Type(); {
		case t.IsDir():
			return nil
		case t&fs.ModeSymlink != 0:
			s.log.Debug("scan: symbolic link not followed", "path", rel)
			return nil
		case !t.IsRegular():
			s.log.Debug("scan: not a regular file", "path", rel, "type", t.String())
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				s.log.Info("scan: file vanished during the scan", "path", rel)
				return nil // not seen: deleted if the inventory has it
			}
			st.Skipped++
			s.log.Warn("scan: cannot stat; left as it was", "path", rel, "err", err)
			s.protect(entries, index, rel)
			return nil
		}
		if !fi.Mode().IsRegular() { // replaced since the directory was read
			return nil
		}
		st.Files++
		key := statOf(fi)
		j := job{rel: rel, abs: p, st: key}
		if i, ok := index[rel]; ok {
			e := &entries[i]
			e.seen = true
			if key.equal(statKey{e.res.Size, e.res.ModTime, e.res.Inode}) {
				st.Unchanged++
				return nil
			}
			j.prev = &e.res
		}
		select {
		case jobs <- j:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	})
	// Protect everything under directories that could not be listed.
	if len(protected) > 0 {
		for i := range entries {
			for _, pre := range protected {
				if strings.HasPrefix(entries[i].res.Path, pre) {
					entries[i].seen = true
				}
			}
		}
	}
	if err != nil {
		return fmt.Errorf("scan %s: %w", s.root, err)
	}
	return nil
}

func (s *Scanner) protect(entries []entry, index map[string]int, rel string) {
	if i, ok := index[rel]; ok {
		entries[i].seen = true
	}
}

func (s *Scanner) skipped(rel, name string) bool {
	for _, p := range s.opt.Skip {
		if ok, _ := path.Match(p, rel); ok {
			return true
		}
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// errChanged reports a file that changed while it was read.
var errChanged = errors.New("changed while being read")

// hash reads j's file, retrying once if it changes while being read.
func (s *Scanner) hash(ctx context.Context, j job, buf []byte) result {
	if s.beforeHash != nil {
		s.beforeHash(j.rel)
	}
	r := result{job: j}
	for try := 0; ; try++ {
		res, err := s.hashOnce(j, buf)
		switch {
		case err == nil:
			r.out, r.res = okHashed, res
			return r
		case errors.Is(err, fs.ErrNotExist):
			s.log.Info("scan: file vanished during the scan", "path", j.rel)
			r.out = vanished
			return r
		case errors.Is(err, errChanged) && try == 0 && ctx.Err() == nil:
			fi, serr := os.Lstat(j.abs)
			if serr != nil {
				if errors.Is(serr, fs.ErrNotExist) {
					s.log.Info("scan: file vanished during the scan", "path", j.rel)
					r.out = vanished
					return r
				}
				err = serr
			} else if !fi.Mode().IsRegular() {
				s.log.Info("scan: file replaced by a non-regular file during the scan", "path", j.rel)
				r.out = vanished
				return r
			} else {
				j.st = statOf(fi)
				r.job = j
				continue
			}
		}
		if errors.Is(err, errChanged) {
			s.log.Warn("scan: file keeps changing while read; skipped until the next scan", "path", j.rel)
		} else {
			s.log.Warn("scan: cannot read file; left as it was", "path", j.rel, "err", err)
		}
		r.out = failed
		return r
	}
}

// hashOnce reads the file whose stat was j.st and returns its metadata, or
// errChanged if the file is not the one stat'ed or changed while read.
func (s *Scanner) hashOnce(j job, buf []byte) (store.Resource, error) {
	start := time.Now()
	f, err := s.opt.Open(j.abs)
	if err != nil {
		return store.Resource{}, err
	}
	defer f.Close()
	m, h := md5.New(), sha256.New()
	var n int64
	var head [512]byte
	hn := 0
	// Read exactly the stat'ed size: a file that grew or was rewritten
	// meanwhile has a different size or mtime in the Stat below.
	for n < j.st.size {
		k, err := f.Read(buf[:min(int64(len(buf)), j.st.size-n)])
		if k > 0 {
			if hn < len(head) {
				hn += copy(head[hn:], buf[:k])
			}
			m.Write(buf[:k])
			h.Write(buf[:k])
			n += int64(k)
		}
		if err == io.EOF {
			break // shrank: caught below
		}
		if err != nil {
			return store.Resource{}, err
		}
	}
	fi, err := f.Stat()
	if err != nil {
		return store.Resource{}, err
	}
	after := statOf(fi)
	if n != j.st.size || !after.equal(j.st) {
		return store.Resource{}, errChanged
	}
	r := store.Resource{
		Path:    j.rel,
		Size:    n,
		ModTime: after.mtime,
		Inode:   after.ino,
		LastMod: after.mtime,
	}
	copy(r.MD5[:], m.Sum(nil))
	copy(r.SHA256[:], h.Sum(nil))
	r.Type = mime.TypeByExtension(path.Ext(j.rel))
	if r.Type == "" {
		r.Type = http.DetectContentType(head[:hn])
	}
	if !after.mtime.Before(start.Add(-RacyWindow)) {
		r.ModTime = time.Time{} // racily clean: read again next time
	}
	return r, nil
}

// applier collects outcomes into batches and commits them.
type applier struct {
	s       *Scanner
	st      *Stats
	last    time.Time // the journal's last datetime
	changes []store.Change
	touches []store.Resource
}

func (a *applier) add(ctx context.Context, r result) error {
	a.st.Hashed += btoi(r.out == okHashed)
	switch r.out {
	case failed:
		a.st.Skipped++
		return nil
	case vanished:
		if r.prev == nil {
			return nil
		}
		return a.change(ctx, rs.Deleted, *r.prev)
	}
	a.st.Bytes += r.res.Size
	switch {
	case r.prev == nil:
		return a.change(ctx, rs.Created, r.res)
	case r.prev.Size != r.res.Size || r.prev.MD5 != r.res.MD5 || r.prev.SHA256 != r.res.SHA256:
		return a.change(ctx, rs.Updated, r.res)
	}
	// Touched: same bytes. Refresh the stat fields only; the content
	// metadata (type and lastmod included) stay as journaled.
	t := *r.prev
	t.ModTime, t.Inode = r.res.ModTime, r.res.Inode
	a.touches = append(a.touches, t)
	a.st.Touched++
	return a.maybeFlush(ctx)
}

func (a *applier) change(ctx context.Context, kind rs.Change, r store.Resource) error {
	a.changes = append(a.changes, store.Change{Kind: kind, Resource: r})
	switch kind {
	case rs.Created:
		a.st.Created++
	case rs.Updated:
		a.st.Updated++
	case rs.Deleted:
		a.st.Deleted++
	}
	return a.maybeFlush(ctx)
}

func (a *applier) maybeFlush(ctx context.Context) error {
	if len(a.changes)+len(a.touches) >= a.s.opt.BatchSize {
		return a.flush(ctx)
	}
	return nil
}

// flush commits the pending batch with one datetime, never before the
// journal's last one.
func (a *applier) flush(ctx context.Context) error {
	if len(a.changes)+len(a.touches) == 0 {
		return nil
	}
	now := a.s.opt.Now().Round(0).UTC()
	if now.Before(a.last) {
		now = a.last
	}
	for i := range a.changes {
		a.changes[i].Time = now
	}
	if _, _, err := a.s.opt.Store.Apply(ctx, store.Batch{Changes: a.changes, Touch: a.touches}); err != nil {
		return fmt.Errorf("scan: applying %d changes and %d touches: %w", len(a.changes), len(a.touches), err)
	}
	if len(a.changes) > 0 {
		a.last = now
	}
	a.st.Batches++
	a.changes, a.touches = a.changes[:0], a.touches[:0]
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
