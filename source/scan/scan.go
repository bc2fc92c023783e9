package scan

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/storage"
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
	Root string // directory to scan
	// Content, if set, is scanned instead of Root: a collection read
	// through storage.Content (a bucket), listed in key order. Exclude
	// does not apply to it (paths on the local disk); the hidden-name and
	// Skip rules apply to its keys as to paths. ScanPaths scans it whole.
	Content storage.Content
	Store   store.Store // inventory and journal

	// Exclude lists paths (absolute, or relative to the working
	// directory) that are not scanned, such as the state directory.
	Exclude []string
	// Skip lists path.Match patterns. A file or directory is skipped when
	// a pattern matches its slash-separated path relative to Root or its
	// name alone ("*.tmp", "cache", "logs/2024-*").
	Skip []string

	// RefuseEmptyRoot makes a scan (Scan or ScanPaths) fail with
	// ErrEmptyRoot, changing nothing, when the tree under Root holds no
	// file the walk would publish (hidden, excluded and skipped ones
	// aside; empty directories do not count) while the inventory holds
	// resources: an unmounted share or an emptied directory, whose scan
	// would journal the deletion of every resource. serve and publish set
	// it unless --allow-empty; replicas rely on it: any of them may take
	// the scanner role, with its own mount. A Root that is missing is
	// refused the same way whether it is set or not.
	RefuseEmptyRoot bool

	Workers   int // hashing workers; default runtime.NumCPU()
	BatchSize int // changes and touches per store transaction; default 10,000

	Logger *slog.Logger     // default slog.Default()
	Now    func() time.Time // clock for change datetimes; default time.Now
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
	// Baseline: this scan was (part of) the first scan of the collection,
	// so its changes went to the inventory without journal records; see
	// store.MetaBaseline. BaselineDone: the baseline is now complete.
	Baseline, BaselineDone bool
}

// Scanner scans one directory into one store.
type Scanner struct {
	opt        Options
	root       string
	exclude    map[string]bool
	excludeIn  map[string]map[string]bool // directory -> names excluded in it
	mu         sync.Mutex                 // one scan at a time
	log        *slog.Logger
	maxPath    int                                 // the store's store.PathLimiter, 0: none
	beforeHash func(rel string)                    // test hook: runs in the worker before a file is read
	openHook   func(name string) (hashFile, error) // test hook: opens a file to hash
}

// New returns a Scanner for opt.
func New(opt Options) (*Scanner, error) {
	if opt.Store == nil {
		return nil, errors.New("scan: no store")
	}
	root, err := filepath.Abs(opt.Root)
	if opt.Content != nil {
		root, err = opt.Content.Location(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("scan: root: %w", err)
	}
	for _, p := range opt.Skip {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("%w %q: %w", ErrSkipPattern, p, err)
		}
	}
	s := &Scanner{opt: opt, root: root, exclude: map[string]bool{}, excludeIn: map[string]map[string]bool{}, log: opt.Logger}
	for _, e := range opt.Exclude {
		a, err := filepath.Abs(e)
		if err != nil {
			return nil, fmt.Errorf("scan: exclude %q: %w", e, err)
		}
		s.exclude[a] = true
		d, n := filepath.Split(a)
		if d != string(filepath.Separator) {
			d = strings.TrimSuffix(d, string(filepath.Separator))
		}
		if s.excludeIn[d] == nil {
			s.excludeIn[d] = map[string]bool{}
		}
		s.excludeIn[d][n] = true
	}
	if l, ok := opt.Store.(store.PathLimiter); ok {
		s.maxPath = l.MaxPathBytes()
	}
	if s.opt.Workers <= 0 {
		s.opt.Workers = runtime.NumCPU()
		if opt.Content != nil {
			s.opt.Workers = max(s.opt.Workers, contentWorkers)
		}
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

type job struct {
	rel   string
	abs   string  // absolute path, unless dir is set (see path)
	dir   *dirRef // if not nil, the file is dir's entry name
	name  string
	st    statKey // from lstat, when known
	known bool
	prev  store.Resource // the inventory record, if old
	old   bool           // the file has an inventory record
	ver   string         // Options.Content: the listed Version (st holds its size)
}

type outcome uint8

const (
	okHashed outcome = iota
	vanished         // gone before or while reading: deleted if known
	failed           // unreadable or kept changing: leave as it was
)

type result struct {
	job
	out outcome
	res store.Resource // for okHashed
}

// walkChunk is how many files the merge hands to a worker at once.
const walkChunk = 64

// Scan walks the directory once and applies the differences with the
// inventory to the store (see the package documentation). It returns the
// first error that stops it: the root cannot be walked, ctx is done, or the
// store fails. Problems with single files are logged and counted in
// Stats.Skipped, not returned.
//
// The walk lists the directories in path order and merges them with the
// inventory, read in pages in the same order (Store.ResourcesIn), so that
// memory does not grow with the collection; the workers lstat each known
// file, compare it with its inventory record and hash it when needed, so
// both the stat calls of a rescan and the reads of a first scan use every
// core; a committer goroutine commits full batches while the workers go
// on.
func (s *Scanner) Scan(ctx context.Context) (Stats, error) {
	return s.run(ctx, []string{""})
}

// ScanPaths scans only the given paths (slash-separated, relative to the
// root; "" is the whole tree): for each, the file at that path, or the
// directory there and everything under it, is compared with the inventory
// records of that path and of the paths under it, with the same rules as
// Scan. A path that no longer exists has its records deleted, so the path
// of a removed file or directory is scanned like any other. Records
// outside the given paths are neither read nor changed, which makes the
// cost of a scan follow the size of the paths, not of the collection:
// this is what a filesystem event triggers. Until the first scan has
// completed the baseline, ScanPaths scans the whole tree.
func (s *Scanner) ScanPaths(ctx context.Context, paths []string) (Stats, error) {
	return s.run(ctx, normalisePaths(paths))
}

// Coalesce is how many paths in one directory ScanPaths scans one by one;
// more are scanned as their directory (one listing instead of a lookup,
// a store read and a range read each), which reads every file of it:
// source.Run holds back such paths while a file there is being written.
const Coalesce = 64

// normalisePaths cleans the paths, replaces more than Coalesce paths in
// one directory by the directory, sorts them and drops those under
// another one (or equal to it), so that their key ranges are disjoint and
// ascending.
func normalisePaths(paths []string) []string {
	var out []string
	perDir := map[string]int{}
	for _, p := range paths {
		p = strings.Trim(path.Clean("/"+p), "/")
		if p == "" {
			return []string{""}
		}
		out = append(out, p)
		perDir[path.Dir(p)]++
	}
	for i, p := range out {
		if d := path.Dir(p); perDir[d] > Coalesce {
			if d == "." {
				return []string{""}
			}
			out[i] = d
		}
	}
	slices.SortFunc(out, cmpPath)
	keep := out[:0]
	for _, p := range out {
		if n := len(keep); n > 0 && (p == keep[n-1] || strings.HasPrefix(p, keep[n-1]+"/")) {
			continue
		}
		keep = append(keep, p)
	}
	return keep
}

// cmpPath orders paths so that a path precedes the paths under it and
// those come before any later sibling; with the walk's order and the
// inventory's byte order, "a/x" sorts after "a.txt": comparing a path
// as path+"/" gives exactly that.
func cmpPath(a, b string) int { return cmpEntry(a, true, b, true) }

func (s *Scanner) run(ctx context.Context, targets []string) (Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st Stats
	ss, err := s.opt.Store.Stats(ctx)
	if err != nil {
		return st, fmt.Errorf("scan: %w", err)
	}
	bt, hasBaseline, err := store.BaselineTime(ctx, s.opt.Store)
	if err != nil {
		return st, fmt.Errorf("scan: %w", err)
	}
	// The first scan (until one completes, while the journal is empty)
	// establishes the baseline: the Resource List describes it, and the
	// Change Lists only what changes after it.
	st.Baseline = !hasBaseline && ss.LastSeq == 0
	if st.Baseline || s.opt.Content != nil {
		targets = []string{""}
	}
	whole := len(targets) == 1 && targets[0] == ""
	if !st.Baseline && ss.Resources > 0 {
		guard := s.guardRoot
		if s.opt.Content != nil {
			guard = s.guardContent
		}
		if err := guard(ctx, ss.Resources); err != nil {
			return st, err
		}
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan []job, 16)
	// Results go to the applier a chunk at a time, as jobs come: one
	// goroutine hand-off per file (a channel send each) cost more in
	// scheduler wake-ups than the file's read on a first scan.
	results := make(chan []result, 16)
	// Spent chunks and result slices go back to their producers through
	// these free lists (bounded: a full list drops the slice).
	freeJobs, freeResults := make(chan []job, 32), make(chan []result, 32)
	wstats := make([]Stats, s.opt.Workers)
	var workers sync.WaitGroup
	for w := range s.opt.Workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			wk := newWorker()
			for chunk := range jobs {
				var out []result
				for _, j := range chunk {
					r, ok := s.visit(ctx, j, &wstats[w], wk)
					j.done()
					if !ok {
						continue
					}
					if out == nil {
						select {
						case out = <-freeResults:
						default:
							out = make([]result, 0, walkChunk)
						}
					}
					out = append(out, r)
				}
				clear(chunk) // no directory or record kept alive by the free list
				select {
				case freeJobs <- chunk[:0]:
				default:
				}
				if len(out) == 0 {
					continue
				}
				select {
				case results <- out:
				case <-ctx.Done():
				}
			}
		}()
	}

	ap := newApplier(ctx, s, &st, later(ss.LastTime, bt), cancel)
	applied := make(chan struct{})
	go func() {
		defer close(applied)
		for rs := range results {
			for i := range rs {
				ap.add(rs[i])
			}
			if cap(rs) < walkChunk {
				continue // a deletion the merge sent alone
			}
			clear(rs)
			select {
			case freeResults <- rs[:0]:
			default:
			}
		}
	}()

	m := &merge{s: s, ctx: ctx, jobs: jobs, results: results, st: &st, free: freeJobs}
	var werr error
	if s.opt.Content != nil {
		werr = m.content()
	} else {
		for _, t := range targets {
			if werr = m.target(t); werr != nil {
				break
			}
		}
	}
	if werr == nil {
		werr = m.send()
	}
	close(jobs)
	workers.Wait()
	close(results)
	<-applied
	for _, w := range wstats {
		st.Files += w.Files
		st.Unchanged += w.Unchanged
		st.Skipped += w.Skipped
	}
	complete := werr == nil && ctx.Err() == nil && whole
	if err := ap.close(st.Baseline && complete); err != nil {
		return st, err
	}
	st.BaselineDone = st.Baseline && complete
	if werr != nil {
		if c := context.Cause(ctx); c != nil && errors.Is(werr, context.Canceled) {
			werr = c
		}
		return st, werr
	}
	if ctx.Err() != nil {
		return st, context.Cause(ctx)
	}
	return st, nil
}

// visit stats one file found by the walk and hashes it unless its stat
// fields match its inventory record. ok is false when there is nothing to
// apply.
func (s *Scanner) visit(ctx context.Context, j job, ws *Stats, w *worker) (r result, ok bool) {
	if s.opt.Content != nil {
		return s.visitContent(ctx, j, ws, w)
	}
	if !j.old {
		// A new file: no lstat, the worker's fstat after opening it is
		// the stat to trust (one path lookup fewer per new file).
		ws.Files++
		return s.hash(ctx, j, w), true
	}
	var key statKey
	var regular bool
	var err error
	if j.dir != nil {
		key, regular, err = j.dir.lstat(j.name)
	} else {
		key, regular, err = lstat(j.abs)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.log.Info("scan: file vanished during the scan", "path", j.rel)
			return result{job: j, out: vanished}, true
		}
		ws.Skipped++
		s.log.Warn("scan: cannot stat; left as it was", "path", j.rel, "err", err)
		return r, false
	}
	if !regular { // replaced since its directory was listed: deleted
		return result{job: j, out: vanished}, true
	}
	ws.Files++
	if key.equal(statKey{j.prev.Size, j.prev.ModTime, j.prev.Inode}) {
		ws.Unchanged++
		return r, false
	}
	j.st, j.known = key, true
	return s.hash(ctx, j, w), true
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

// errNotRegular reports a path that is no longer a regular file.
var errNotRegular = errors.New("not a regular file")

// hash reads j's file, retrying once if it changes while being read.
func (s *Scanner) hash(ctx context.Context, j job, w *worker) result {
	if s.beforeHash != nil {
		s.beforeHash(j.rel)
	}
	r := result{job: j}
	for read := 0; ; read++ { // a file that changed is read again once (not an HTTP retry)
		var res store.Resource
		var err error
		if s.opt.Content != nil {
			res, err = s.hashContent(ctx, j, w)
		} else {
			res, err = s.hashOnce(j, w)
		}
		switch {
		case err == nil:
			r.out, r.res = okHashed, res
			return r
		case errors.Is(err, fs.ErrNotExist):
			s.log.Info("scan: file vanished during the scan", "path", j.rel)
			r.out = vanished
			return r
		case errors.Is(err, errNotRegular):
			s.log.Info("scan: file replaced by a non-regular file during the scan", "path", j.rel)
			r.out = vanished
			return r
		case errors.Is(err, errChanged) && read == 0 && ctx.Err() == nil:
			j.known = false // read again, trusting the new open's fstat
			continue
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

// hashFile is an open file being hashed.
type hashFile interface {
	io.ReadCloser
	stat() (k statKey, regular bool, err error)
}

type osFile struct{ *os.File }

func (f osFile) stat() (statKey, bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return statKey{}, false, err
	}
	return statOf(fi), fi.Mode().IsRegular(), nil
}

// worker holds one hashing worker's reusable state.
type worker struct {
	buf  []byte
	md5  hash.Hash
	sha  hash.Hash
	head [512]byte
}

func newWorker() *worker {
	return &worker{buf: make([]byte, 256<<10), md5: md5.New(), sha: sha256.New()}
}

func (s *Scanner) open(j job) (hashFile, error) {
	switch {
	case s.openHook != nil:
		return s.openHook(j.path())
	case j.dir != nil:
		return j.dir.openFile(j.name)
	}
	return openRaw(j.abs)
}

// path returns the file's absolute path.
func (j job) path() string {
	if j.dir != nil {
		return joinPath(j.dir.abs, j.name)
	}
	return j.abs
}

func joinPath(dir, name string) string {
	if strings.HasSuffix(dir, string(filepath.Separator)) {
		return dir + name
	}
	return dir + string(filepath.Separator) + name
}

// done releases the job's directory.
func (j job) done() {
	if j.dir != nil {
		j.dir.release()
	}
}

// hashOnce reads the file whose stat was j.st and returns its metadata, or
// errChanged if the file is not the one stat'ed or changed while read.
func (s *Scanner) hashOnce(j job, w *worker) (store.Resource, error) {
	start := time.Now()
	f, err := s.open(j)
	if err != nil {
		return store.Resource{}, err
	}
	defer f.Close()
	before, regular, err := f.stat()
	switch {
	case err != nil:
		return store.Resource{}, err
	case !regular:
		return store.Resource{}, errNotRegular
	case j.known && !before.equal(j.st):
		return store.Resource{}, errChanged // changed since the lstat
	}
	w.md5.Reset()
	w.sha.Reset()
	var n int64
	hn := 0
	// Read exactly the size of the fstat before: a file that grew, shrank
	// or was rewritten meanwhile has another size or mtime in the fstat
	// after.
	for n < before.size {
		k, err := f.Read(w.buf[:min(int64(len(w.buf)), before.size-n)])
		if k > 0 {
			if hn < len(w.head) {
				hn += copy(w.head[hn:], w.buf[:k])
			}
			w.md5.Write(w.buf[:k])
			w.sha.Write(w.buf[:k])
			n += int64(k)
		}
		if err == io.EOF {
			break // shrank: caught below
		}
		if err != nil {
			return store.Resource{}, fmt.Errorf("read %s: %w", j.path(), err)
		}
	}
	after, _, err := f.stat()
	if err != nil {
		return store.Resource{}, err
	}
	if n != before.size || !after.equal(before) {
		return store.Resource{}, errChanged
	}
	r := store.Resource{
		Path:    j.rel,
		Size:    n,
		ModTime: after.mtime,
		Inode:   after.ino,
		LastMod: after.mtime,
	}
	w.md5.Sum(r.MD5[:0])
	w.sha.Sum(r.SHA256[:0])
	r.Type = mime.TypeByExtension(path.Ext(j.rel))
	if r.Type == "" {
		r.Type = http.DetectContentType(w.head[:hn])
	}
	if !after.mtime.Before(start.Add(-RacyWindow)) {
		r.ModTime = time.Time{} // racily clean: read again next time
	}
	return r, nil
}

// applier collects outcomes into batches (in one goroutine) and hands full
// batches to a committer goroutine, so that hashing goes on while a batch
// is being committed and fsync'ed. After the first store error it drops
// everything and cancels the scan.
type applier struct {
	s       *Scanner
	st      *Stats
	changes []store.Change
	touches []store.Resource
	commit  chan store.Batch
	done    chan error
	batches int // committed; written by the committer, read after done
	// baseline: changes go to the inventory only (Stats.Baseline).
	baseline bool
}

func newApplier(ctx context.Context, s *Scanner, st *Stats, last time.Time, cancel context.CancelCauseFunc) *applier {
	a := &applier{s: s, st: st, commit: make(chan store.Batch, 1), done: make(chan error, 1), baseline: st.Baseline}
	go func() {
		var err error
		for b := range a.commit {
			if err != nil {
				continue
			}
			// One datetime per batch, never before the journal's last.
			now := s.opt.Now().Round(0).UTC()
			if now.Before(last) {
				now = last
			}
			for i := range b.Changes {
				b.Changes[i].Time = now
			}
			b.Baseline = a.baseline
			if _, ok := b.Meta[store.MetaBaseline]; ok {
				b.Meta[store.MetaBaseline] = store.FormatBaseline(now)
			}
			if _, _, err = s.opt.Store.Apply(ctx, b); err != nil {
				err = fmt.Errorf("scan: applying %d changes and %d touches: %w", len(b.Changes), len(b.Touch), err)
				cancel(err)
				continue
			}
			if len(b.Changes) > 0 {
				last = now
			}
			a.batches++
		}
		a.done <- err
	}()
	return a
}

func (a *applier) add(r result) {
	a.st.Hashed += btoi(r.out == okHashed)
	switch r.out {
	case failed:
		a.st.Skipped++
		return
	case vanished:
		if r.old {
			a.change(rs.Deleted, r.prev)
		}
		return
	}
	a.st.Bytes += r.res.Size
	switch {
	case !r.old:
		a.change(rs.Created, r.res)
		return
	case r.prev.Size != r.res.Size || r.prev.MD5 != r.res.MD5 || r.prev.SHA256 != r.res.SHA256:
		a.change(rs.Updated, r.res)
		return
	}
	// Touched: same bytes. Refresh the stat fields only; the content
	// metadata (type and lastmod included) stay as journaled.
	t := r.prev
	t.ModTime, t.Inode = r.res.ModTime, r.res.Inode
	a.touches = append(a.touches, t)
	a.st.Touched++
	a.maybeFlush()
}

func (a *applier) change(kind rs.Change, r store.Resource) {
	if a.changes == nil {
		// Room for a batch as maybeFlush usually cuts it (eagerly, or at
		// rescanBatch), not BatchSize: a Change is some 250 bytes.
		limit := a.s.opt.BatchSize
		if !a.baseline {
			limit = min(limit, rescanBatch)
		}
		a.changes = make([]store.Change, 0, min(limit, 2*eagerBatch))
	}
	a.changes = append(a.changes, store.Change{Kind: kind, Resource: r})
	switch kind {
	case rs.Created:
		a.st.Created++
	case rs.Updated:
		a.st.Updated++
	case rs.Deleted:
		a.st.Deleted++
	}
	a.maybeFlush()
}

// rescanBatch caps the batches of a scan after the baseline: their changes
// land at random places in the inventory, and a store transaction holds
// every page it changes (a 16 KiB bbolt leaf, decoded, for each): 1,000
// scattered changes in a 1,000,000-resource state held ~40 MB of heap for
// the commit. The baseline's inserts arrive in key order and fill pages
// left to right, so its batches stay large.
const rescanBatch = 128

// eagerBatch is the least batch of a baseline handed to an idle
// committer before it is full: the committer then keeps up with the
// workers, and what is left to commit once the last file is hashed (the
// scan's tail, which nothing overlaps) is a small batch, not up to
// BatchSize changes.
const eagerBatch = 1024

func (a *applier) maybeFlush() {
	limit := a.s.opt.BatchSize
	if !a.baseline {
		limit = min(limit, rescanBatch)
	}
	n := len(a.changes) + len(a.touches)
	// len(a.commit) == 0: the committer has taken the last batch, so
	// this one does not wait (the applier is the only sender).
	if n >= limit || a.baseline && n >= eagerBatch && len(a.commit) == 0 {
		a.flush()
	}
}

func (a *applier) flush() {
	if len(a.changes)+len(a.touches) == 0 {
		return
	}
	// In path order: the inventory's B+tree is then filled left to right,
	// and a Change List reads in a stable order. A path appears at most
	// once per scan, so this reorders nothing that matters.
	slices.SortFunc(a.changes, func(x, y store.Change) int { return strings.Compare(x.Resource.Path, y.Resource.Path) })
	a.commit <- store.Batch{Changes: a.changes, Touch: a.touches}
	a.changes, a.touches = nil, nil
}

// close commits what is pending and returns the first store error. With
// markBaseline, the last batch (empty if nothing is pending) also records
// the baseline as complete, at that batch's datetime.
func (a *applier) close(markBaseline bool) error {
	if markBaseline {
		slices.SortFunc(a.changes, func(x, y store.Change) int { return strings.Compare(x.Resource.Path, y.Resource.Path) })
		a.commit <- store.Batch{Changes: a.changes, Touch: a.touches, Meta: map[string][]byte{store.MetaBaseline: nil}}
		a.changes, a.touches = nil, nil
	} else {
		a.flush()
	}
	close(a.commit)
	err := <-a.done
	a.st.Batches = a.batches
	return err
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
