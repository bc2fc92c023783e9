package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// version is one loaded state of a collection's graph: immutable once
// published. Its files are closed and removed when it is superseded and
// no request holds it (acquire, release).
type version struct {
	gf      *graph
	seq     uint64    // the journal's last seq when it was loaded
	updated time.Time // datetime of the newest change it includes, or the baseline
	key     string    // names its snapshot files: seq and a hash of the whole graph
	// kept locates, in keptF, the N-Triples of the fragments whose blank
	// nodes are costly to label (see blankFrag), by resource IRI: few,
	// so the map is small; overBudget counts those beyond the
	// canonicalisation budget.
	kept       map[string]keptRef
	keptF      *os.File
	overBudget int
	// cache is the file of the blank-node fragments' forms (cacheRec, in
	// IRI order): the next load reuses a form whose loaded triples are
	// unchanged.
	cache string
	files []string // removed when the version is

	users   atomic.Int64
	retired atomic.Bool
	once    sync.Once
}

type keptRef struct {
	off, n int64
	over   bool // beyond the canonicalisation budget
}

// keptNT returns the kept N-Triples of a fragment.
func (v *version) keptNT(k keptRef) ([]byte, error) {
	b := make([]byte, k.n)
	_, err := v.keptF.ReadAt(b, k.off)
	return b, err
}

// done closes and removes v's files once it is retired and unused.
func (v *version) done() {
	if v.retired.Load() && v.users.Load() == 0 {
		v.once.Do(func() {
			v.gf.release() // keptF is the collection's
			for _, f := range v.files {
				os.Remove(f)
			}
		})
	}
}

// acquire returns the current version, held until release: its files
// stay open.
func (c *Collection) acquire() *version {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v := c.cur
	v.users.Add(1)
	return v
}

func (c *Collection) release(v *version) {
	v.users.Add(-1)
	v.done()
}

// version returns the current version for its fields (not its files:
// use acquire for those).
func (c *Collection) version() *version {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cur
}

// fragment is Fragment without a copy.
func (c *Collection) fragment(iri string, f rdf.Format) ([]byte, error) {
	v := c.acquire()
	defer c.release(v)
	return c.fragmentOf(v, iri, f)
}

// fragmentOf is iri's fragment in v (acquired by the caller).
func (c *Collection) fragmentOf(v *version, iri string, f rdf.Format) ([]byte, error) {
	if k, ok := v.kept[iri]; ok {
		nt, err := v.keptNT(k)
		if err != nil || f == rdf.NTriples {
			return nt, err
		}
		var b bytes.Buffer
		ts := rdf.Parse(bytes.NewReader(nt), rdf.NTriples, "")
		var perr error
		seq := func(yield func(rdf.Triple) bool) {
			for t, err := range ts {
				if err != nil {
					perr = err
					return
				}
				if !yield(t) {
					return
				}
			}
		}
		if err := writeTriples(&b, f, seq); err != nil || perr != nil {
			return nil, errors.Join(err, perr)
		}
		return b.Bytes(), nil
	}
	ls, err := v.gf.lines(termKey(rdf.IRI(iri)))
	if err != nil {
		return nil, err
	}
	if f == rdf.NTriples && !slices.ContainsFunc(ls, hasBlankLine) {
		// Without blank nodes a subject's lines are its canonical form
		// already (sorted, distinct, as form hashed them for the
		// inventory): served as they are, not parsed, sorted and written
		// again per request.
		return []byte(strings.Join(ls, "")), nil
	}
	// The fragment from the lines read (those of the blank nodes they
	// reach added), as the load's form took it: the subject is looked
	// up once.
	cl, err := v.gf.closureLines(ls)
	if err != nil {
		return nil, err
	}
	fts, err := parseLines(cl)
	if err != nil {
		return nil, err
	}
	if hasBlank(fts) {
		c.canonRuns.Add(1)
	}
	ts, nt := canonical(fts)
	if f == rdf.NTriples {
		return nt, nil
	}
	var b bytes.Buffer
	if err := writeTriples(&b, f, slices.Values(ts)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// label returns r's rdfs:label in v (the least, for determinism), or "".
//
// Only the label lines are parsed: a fragments feed page looks up the
// label of every entry.
func labelOf(v *version, iri string) string {
	ls, _ := v.gf.lines(termKey(rdf.IRI(iri)))
	ls = slices.DeleteFunc(ls, func(l string) bool { return !strings.Contains(l, " <"+rdfsLabel+"> ") })
	ts, _ := parseLines(ls)
	best := ""
	for _, t := range ts {
		if t.P.IsIRI() && t.P.Value == rdfsLabel && t.O.IsLiteral() && (best == "" || t.O.Value < best) {
			best = t.O.Value
		}
	}
	return best
}

// ErrParse wraps a collection file that could not be read as RDF; the
// collection keeps serving its last good graph.
var ErrParse = errors.New("sdshare/server: collection file is not valid RDF")

// fileRun is one collection file parsed into sorted, distinct records
// (name), kept while the file is unchanged: a reload parses only the
// files that changed and merges the others' runs.
type fileRun struct {
	stamp  stamp
	prefix string // its blank node label prefix
	name   string
	// racy: the file was modified shortly before it was read, so a
	// rewrite of the same size may have kept its mtime (the file
	// system's clock ticks in milliseconds): it is read again (as git
	// treats a racily clean index entry).
	racy bool
}

// racyWindow is how recent an mtime makes a run racy.
var racyWindow = 2 * time.Second

// readRuns stream-parses the files of the collection that changed into
// sorted runs (the others' runs are the last load's). runs are the
// files' runs for the next load.
func (c *Collection) readRuns(ctx context.Context, names []string, stamps map[string]stamp, read *int) (runs map[string]fileRun, err error) {
	runs = map[string]fileRun{}
	defer func() {
		if err != nil {
			for p, r := range runs {
				if c.runs[p] != r {
					os.Remove(r.name)
				}
			}
		}
	}()
	for i, p := range names {
		// Blank node labels are scoped to one document: prefix them with
		// the file's index so that two files' _:b1 stay apart.
		prefix := ""
		if len(names) > 1 {
			prefix = fmt.Sprintf("f%d_", i)
		}
		if r, ok := c.runs[p]; ok && !r.racy && r.stamp == stamps[p] && r.prefix == prefix {
			runs[p] = r
			continue
		}
		c.runNo++
		r := fileRun{stamp: stamps[p], prefix: prefix, name: filepath.Join(c.graphDir, fmt.Sprintf("f-%d.dat", c.runNo)),
			racy: time.Since(time.Unix(0, stamps[p].mtime)) < racyWindow}
		if err := c.readFile(ctx, p, prefix, r.name); err != nil {
			return nil, err
		}
		*read++
		runs[p] = r
	}
	return runs, nil
}

// mergeRuns merges every file's run into the graph file name (index.go)
// and returns it with the version hash (of every statement, in the
// file's order).
func (c *Collection) mergeRuns(names []string, runs map[string]fileRun, name string) (*graph, error) {
	h := sha256.New()
	gw, err := newGraphWriter(name, h)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, p := range names {
		files = append(files, runs[p].name)
	}
	if err := mergeFiles(c.graphDir, files, gw.add); err != nil {
		gw.gf.f.Close()
		os.Remove(name)
		return nil, err
	}
	gf, err := gw.finish()
	if err != nil {
		os.Remove(name)
		return nil, err
	}
	return wholeGraph(gf, [32]byte(h.Sum(nil))), nil
}

// readFile parses the collection file p into the sorted run name.
func (c *Collection) readFile(ctx context.Context, p, prefix, name string) (err error) {
	f, _ := formatOf(p)
	if f == 0 {
		f = rdf.NTriples
	}
	fh, err := c.openFile(p)
	if err != nil {
		return err
	}
	defer fh.Close()
	s := &sorter{dir: c.graphDir}
	defer s.close()
	abs, _ := filepath.Abs(p)
	base := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	n := 0
	for t, err := range rdf.Parse(bufio.NewReaderSize(fh, 256<<10), f, base) {
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrParse, p, err)
		}
		if t.S.IsBlank() {
			t.S.Value = prefix + blankLabel(t.S.Value)
		}
		if t.O.IsBlank() {
			t.O.Value = prefix + blankLabel(t.O.Value)
		}
		rec, err := record(t)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrParse, p, err)
		}
		if err := s.add(rec); err != nil {
			return err
		}
		if n++; n%65536 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	out, err := os.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(out, 256<<10)
	err = s.each(func(rec string) error {
		_, err := w.WriteString(rec)
		return err
	})
	if err = errors.Join(err, w.Flush(), out.Close()); err != nil {
		os.Remove(name)
	}
	return err
}

// cacheRec is the form of one fragment with blank nodes, as a load
// computed it: raw is the SHA-256 of its lines as loaded (sorted), sha
// and size those of the N-Triples served; kept locates them in the
// version's kept file when they are kept (blankFrag).
type cacheRec struct {
	iri        string
	raw, sha   [32]byte
	size       int64
	kept       bool
	koff, klen int64
	over       bool
	nt         []byte // the N-Triples, when computed or kept (not in the file)
}

func (r cacheRec) line() string {
	return strings.Join([]string{r.iri, hex.EncodeToString(r.raw[:]), hex.EncodeToString(r.sha[:]),
		strconv.FormatInt(r.size, 10), strconv.FormatBool(r.kept), strconv.FormatInt(r.koff, 10),
		strconv.FormatInt(r.klen, 10), strconv.FormatBool(r.over)}, "\x00") + "\n"
}

func parseCacheRec(l string) (cacheRec, error) {
	f := strings.Split(strings.TrimSuffix(l, "\n"), "\x00")
	var r cacheRec
	if len(f) != 8 {
		return r, fmt.Errorf("sdshare/server: fragment cache: malformed record")
	}
	r.iri = f[0]
	_, err1 := hex.Decode(r.raw[:], []byte(f[1]))
	_, err2 := hex.Decode(r.sha[:], []byte(f[2]))
	var err3, err4, err5, err6, err7 error
	r.size, err3 = strconv.ParseInt(f[3], 10, 64)
	r.kept, err4 = strconv.ParseBool(f[4])
	r.koff, err5 = strconv.ParseInt(f[5], 10, 64)
	r.klen, err6 = strconv.ParseInt(f[6], 10, 64)
	r.over, err7 = strconv.ParseBool(f[7])
	return r, errors.Join(err1, err2, err3, err4, err5, err6, err7)
}

// cacheReader reads a version's cache file in order, for a merge walk.
type cacheReader struct {
	r      *bufio.Reader
	closer io.Closer
	cur    *cacheRec
	err    error
}

func openCache(name string) *cacheReader {
	f, err := os.Open(name)
	if err != nil {
		return &cacheReader{}
	}
	return &cacheReader{r: bufio.NewReaderSize(f, 64<<10), closer: f}
}

// find returns the record of iri, advancing past smaller ones; IRIs are
// asked for in increasing order.
func (cr *cacheReader) find(iri string) *cacheRec {
	for cr.r != nil && cr.err == nil {
		if cr.cur == nil {
			l, err := cr.r.ReadString('\n')
			if l == "" || (err != nil && err != io.EOF) {
				cr.stop()
				return nil
			}
			rec, err := parseCacheRec(l)
			if err != nil {
				cr.stop()
				return nil
			}
			cr.cur = &rec
		}
		switch {
		case cr.cur.iri < iri:
			cr.cur = nil
		case cr.cur.iri == iri:
			return cr.cur
		default:
			return nil
		}
	}
	return nil
}

// copyBefore copies the records before iri ("": all) to w.
func (cr *cacheReader) copyBefore(iri string, w *bufio.Writer) error {
	for cr.r != nil {
		if cr.cur == nil {
			l, err := cr.r.ReadString('\n')
			if l == "" || (err != nil && err != io.EOF) {
				cr.stop()
				return nil
			}
			rec, err := parseCacheRec(l)
			if err != nil {
				cr.stop()
				return err
			}
			cr.cur = &rec
		}
		if iri != "" && cr.cur.iri >= iri {
			return nil
		}
		if _, err := w.WriteString(cr.cur.line()); err != nil {
			return err
		}
		cr.cur = nil
	}
	return nil
}

func (cr *cacheReader) stop() {
	cr.r = nil
	if cr.closer != nil {
		cr.closer.Close()
		cr.closer = nil
	}
}

// LoadReport says what one load found.
type LoadReport struct {
	Skipped                   bool // files unchanged since the last load (rescan only)
	Baseline                  bool
	Created, Updated, Deleted int
	Resources, Triples        int
	// FilesRead is the number of files parsed (the others' sorted runs
	// were unchanged), Compared the number of resources compared with the
	// inventory: with Created, Updated and Deleted, what the load cost.
	FilesRead, Compared int
}

// baselinePage is the number of inventory records per Apply of a
// baseline: the first load of a large collection writes its inventory in
// pages, not one batch in memory.
const baselinePage = 20000

// Load reads the collection's files and journals what changed since the
// last load; force loads them even when their sizes and mtimes are
// unchanged (a file whose size and mtime are those of its last read, and
// that was not modified just before that read, is not parsed again: its
// sorted run is). A file that is not valid RDF fails the load (ErrParse) and
// leaves the collection as it was.
//
// Nothing of the size of the collection is held in memory: the files
// are parsed into a sorted graph file (index.go), whose subjects are then
// walked in IRI order beside the inventory (also in path order) and the
// last load's fragment forms (cacheRec); a fragment with blank nodes
// whose loaded triples are unchanged is not labelled again. The changes
// found are spilled to a temporary file and applied after the walk.
func (c *Collection) Load(ctx context.Context, force bool) (rep LoadReport, err error) {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	defer func() {
		if err != nil {
			c.reloadErrors.Add(1)
			c.lastErr.Store(&err)
		} else {
			c.lastErr.Store(nil)
		}
	}()
	stamps, refused, err := c.files()
	if err != nil {
		return rep, fmt.Errorf("sdshare/server: collection %s: %w", c.name, err)
	}
	c.noteRefused(refused)
	if !force && c.cur != nil && maps.Equal(stamps, c.stamps) {
		return LoadReport{Skipped: true}, nil
	}
	c.reloads.Add(1)
	c.loadNo++
	nv := &version{kept: map[string]keptRef{}}
	gname := filepath.Join(c.graphDir, fmt.Sprintf("g-%d.dat", c.loadNo))
	nv.cache = filepath.Join(c.graphDir, fmt.Sprintf("c-%d.dat", c.loadNo))
	nv.files = []string{nv.cache}
	published := false
	defer func() {
		if !published {
			nv.retired.Store(true)
			nv.done()
		}
	}()
	names := slices.Sorted(maps.Keys(stamps))
	runs, err := c.readRuns(ctx, names, stamps, &rep.FilesRead)
	if err != nil {
		return rep, fmt.Errorf("sdshare/server: collection %s: %w", c.name, err)
	}
	defer func() {
		// The runs of this load's files, kept for the next; the others
		// go (on failure, this load's new ones: readGraph's runs are
		// the files as they are now, which the next load reads again).
		keep, drop := runs, c.runs
		if !published {
			keep, drop = c.runs, runs
		}
		for p, r := range drop {
			if keep[p] != r {
				os.Remove(r.name)
			}
		}
		c.runs = keep
	}()
	// A small change is an overlay over the current graph (layer.go),
	// else every run is merged into a new graph file.
	affected := c.affected(runs, names)
	gf, err := c.layer(ctx, runs, names, affected, gname)
	if err == nil && gf == nil {
		gf, err = c.mergeRuns(names, runs, gname)
	}
	if err != nil {
		return rep, fmt.Errorf("sdshare/server: collection %s: %w", c.name, err)
	}
	nv.gf = gf
	vh := gf.hash
	rep.Resources, rep.Triples = gf.resources, gf.triples

	base, haveBase, err := store.BaselineTime(ctx, c.st)
	if err != nil {
		return rep, err
	}
	stats, err := c.st.Stats(ctx)
	if err != nil {
		return rep, err
	}
	now := time.Now().UTC()
	if now.Before(stats.LastTime) {
		now = stats.LastTime
	}
	if now.Before(base) {
		now = base
	}
	if !haveBase && stats.LastSeq != 0 {
		return rep, fmt.Errorf("%w: collection %s has a journal but no baseline", store.ErrCorrupt, c.name)
	}

	changes, err := c.diff(ctx, nv, affected, now, &rep)
	if err != nil {
		return rep, fmt.Errorf("sdshare/server: collection %s: %w", c.name, err)
	}
	defer changes.close()
	if !haveBase {
		// The baseline: the inventory in pages (no journal records, so a
		// crash between them leaves no baseline and the next load
		// completes it), the last with MetaBaseline.
		var b store.Batch
		for ch, err := range changes.all() {
			if err != nil {
				return rep, err
			}
			b.Changes = append(b.Changes, ch)
			if len(b.Changes) == baselinePage {
				b.Baseline = true
				if _, _, err := c.st.Apply(ctx, b); err != nil {
					return rep, fmt.Errorf("sdshare/server: collection %s: record baseline: %w", c.name, err)
				}
				b = store.Batch{}
			}
		}
		b.Baseline = true
		b.Meta = map[string][]byte{store.MetaBaseline: store.FormatBaseline(now)}
		base = now
		rep.Baseline = true
		c.mu.Lock()
		if _, _, err := c.st.Apply(ctx, b); err != nil {
			c.mu.Unlock()
			return rep, fmt.Errorf("sdshare/server: collection %s: record baseline: %w", c.name, err)
		}
	} else {
		// One atomic batch: the change is in memory, its size the
		// change's.
		var b store.Batch
		for ch, err := range changes.all() {
			if err != nil {
				return rep, err
			}
			b.Changes = append(b.Changes, ch)
		}
		c.mu.Lock()
		if len(b.Changes) > 0 {
			if _, _, err := c.st.Apply(ctx, b); err != nil {
				c.mu.Unlock()
				return rep, fmt.Errorf("sdshare/server: collection %s: record changes: %w", c.name, err)
			}
		}
	}
	// c.mu is held from the Apply to the swap: a fragment read after its
	// journal record is visible sees the new graph.
	stats, err = c.st.Stats(ctx)
	if err != nil {
		c.mu.Unlock()
		return rep, err
	}
	nv.seq, nv.updated = stats.LastSeq, base
	if stats.LastSeq > 0 {
		nv.updated = stats.LastTime
	}
	nv.key = fmt.Sprintf("%d-%x", nv.seq, vh[:6])
	old := c.cur
	c.cur = nv
	published = true
	if old != nil {
		old.retired.Store(true)
		old.done()
	}
	c.mu.Unlock()
	c.stamps = stamps
	select {
	case c.changed <- struct{}{}:
	default:
	}
	if rep.Created+rep.Updated+rep.Deleted > 0 && !rep.Baseline {
		for _, fn := range c.listeners {
			fn()
		}
	}
	return rep, nil
}

// changeSpill holds a load's changes in a temporary file, in order.
type changeSpill struct {
	f *os.File
	w *bufio.Writer
}

func (s *changeSpill) add(ch store.Change) error {
	b, err := json.Marshal(ch)
	if err != nil {
		return err
	}
	s.w.Write(b)
	return s.w.WriteByte('\n')
}

func (s *changeSpill) all() iter.Seq2[store.Change, error] {
	return func(yield func(store.Change, error) bool) {
		if err := s.w.Flush(); err != nil {
			yield(store.Change{}, err)
			return
		}
		if _, err := s.f.Seek(0, io.SeekStart); err != nil {
			yield(store.Change{}, err)
			return
		}
		d := json.NewDecoder(bufio.NewReaderSize(s.f, 64<<10))
		for {
			var ch store.Change
			if err := d.Decode(&ch); err == io.EOF {
				return
			} else if err != nil {
				yield(store.Change{}, err)
				return
			}
			if !yield(ch, nil) {
				return
			}
		}
	}
}

func (s *changeSpill) close() {
	s.f.Close()
	os.Remove(s.f.Name())
}

// diff finds the changes of nv against the inventory (and the counts
// in rep), writing nv's fragment cache and its kept fragments. affected,
// when not nil, lists (sorted) every resource that may have changed since
// the last load (the IRI subjects of the files that changed): only those
// are compared. Otherwise every resource is, beside the inventory.
func (c *Collection) diff(ctx context.Context, nv *version, affected []string, now time.Time, rep *LoadReport) (_ *changeSpill, err error) {
	sf, err := os.CreateTemp(c.graphDir, ".changes-*")
	if err != nil {
		return nil, err
	}
	spill := &changeSpill{f: sf, w: bufio.NewWriterSize(sf, 64<<10)}
	defer func() {
		if err != nil {
			spill.close()
		}
	}()
	cf, err := os.Create(nv.cache)
	if err != nil {
		return nil, err
	}
	cw := bufio.NewWriterSize(cf, 64<<10)
	defer cf.Close()
	if c.keptF == nil {
		if c.keptF, err = os.OpenFile(filepath.Join(c.graphDir, "kept.nt"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
			return nil, err
		}
	}
	nv.keptF = c.keptF
	prev := c.cur
	prevCache := &cacheReader{}
	if prev != nil {
		prevCache = openCache(prev.cache)
		defer prevCache.stop()
	}
	left := c.srv.cfg.CanonicalSteps // the load's labelling budget (fragmentForm)
	if extra := int64(nv.gf.triples) * loadStepsPerTriple; left < math.MaxInt64-extra {
		left += extra
	} else {
		left = math.MaxInt64
	}
	// change records iri's change from old (nil: not in the inventory)
	// to its lines in nv (none: gone).
	change := func(iri string, lines []string, old *store.Resource) error {
		rep.Compared++
		if len(lines) == 0 {
			if old != nil {
				rep.Deleted++
				return spill.add(store.Change{Kind: rs.Deleted, Time: now, Resource: *old})
			}
			return nil
		}
		sha, size, nt, err := c.form(nv, iri, lines, prevCache.find(iri), prev, &left, cw)
		if err != nil {
			return err
		}
		var kind rs.Change
		switch {
		case old == nil:
			kind = rs.Created
			rep.Created++
		case old.SHA256 != sha:
			kind = rs.Updated
			rep.Updated++
		default:
			return nil
		}
		// MD5 of the bytes served: computed only for a change.
		var md [16]byte
		if nt != nil {
			md = md5.Sum(nt)
		} else if md, err = c.fragmentMD5(nv, iri); err != nil {
			return err
		}
		rec := store.Resource{Path: iri, Size: size, SHA256: sha, MD5: md, Type: ntType, LastMod: now}
		return spill.add(store.Change{Kind: kind, Time: now, Resource: rec})
	}
	if affected != nil {
		err = c.diffSome(ctx, nv, affected, prev, prevCache, cw, change)
	} else {
		err = c.diffAll(ctx, nv, change)
	}
	if err != nil {
		return nil, err
	}
	for _, k := range nv.kept {
		if k.over {
			nv.overBudget++
		}
	}
	if err := cw.Flush(); err != nil {
		return nil, err
	}
	return spill, cf.Sync()
}

// diffAll compares every resource of nv with the inventory, both in
// path order.
func (c *Collection) diffAll(ctx context.Context, nv *version, change func(string, []string, *store.Resource) error) error {
	nextInv, stopInv := iter.Pull2(c.st.Resources(ctx))
	defer stopInv()
	var inv *store.Resource
	lastPath := ""
	advance := func() error {
		r, err, ok := nextInv()
		if !ok {
			inv = nil
			return nil
		}
		if err != nil {
			return err
		}
		if r.Path < lastPath {
			return fmt.Errorf("%w: the inventory is not in path order (%q after %q)", store.ErrCorrupt, r.Path, lastPath)
		}
		lastPath = r.Path
		inv = &r
		return nil
	}
	if err := advance(); err != nil {
		return err
	}
	n := 0
	errStop := errors.New("stop")
	err := nv.gf.groups(false, func(g group) error {
		if g.key[0] != kindIRI {
			return errStop // the blank nodes follow every resource
		}
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		iri := g.key[1:]
		for inv != nil && inv.Path < iri {
			if err := change(inv.Path, nil, inv); err != nil {
				return err
			}
			if err := advance(); err != nil {
				return err
			}
		}
		var old *store.Resource
		if inv != nil && inv.Path == iri {
			old = inv
		}
		if err := change(iri, g.lines, old); err != nil {
			return err
		}
		if old != nil {
			return advance()
		}
		return nil
	})
	if err != nil && err != errStop {
		return err
	}
	for inv != nil {
		if err := change(inv.Path, nil, inv); err != nil {
			return err
		}
		if err := advance(); err != nil {
			return err
		}
	}
	return nil
}

// diffSome compares the affected resources only: the others' inventory
// records, cached forms and kept fragments stay as the last load left
// them.
func (c *Collection) diffSome(ctx context.Context, nv *version, affected []string, prev *version, prevCache *cacheReader, cw *bufio.Writer, change func(string, []string, *store.Resource) error) error {
	maps.Copy(nv.kept, prev.kept)
	for i, iri := range affected {
		if i%4096 == 4095 && ctx.Err() != nil {
			return ctx.Err()
		}
		// The cached forms of the resources before iri are unaffected.
		if err := prevCache.copyBefore(iri, cw); err != nil {
			return err
		}
		delete(nv.kept, iri)
		lines, err := nv.gf.lines(string(kindIRI) + iri)
		if err != nil {
			return err
		}
		var old *store.Resource
		r, err := c.st.Get(ctx, iri)
		switch {
		case err == nil:
			old = &r
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		if err := change(iri, lines, old); err != nil {
			return err
		}
		if prevCache.cur != nil && prevCache.cur.iri == iri {
			prevCache.cur = nil // replaced by change's
		}
	}
	return prevCache.copyBefore("", cw)
}

// affectedMax is the most resources a reload compares one by one (their
// IRIs in memory, an inventory read each); past it, it compares them
// all beside the inventory.
const affectedMax = 100000

// affected returns (sorted) the resources of the files whose runs
// differ from the last load's: the IRI subjects in their old and new
// runs. Blank node labels are scoped to their file, so a resource whose
// fragment reaches a changed file's blank nodes has a statement in that
// file. It returns nil when every resource is to be compared: at the
// first load, or past affectedMax.
func (c *Collection) affected(runs map[string]fileRun, names []string) []string {
	if c.cur == nil {
		return nil
	}
	var scan []string
	for p, r := range runs {
		if old, ok := c.runs[p]; !ok || old != r {
			scan = append(scan, r.name)
			if ok {
				scan = append(scan, old.name)
			}
		}
	}
	for p, old := range c.runs {
		if _, ok := runs[p]; !ok {
			scan = append(scan, old.name)
		}
	}
	switch {
	case len(scan) == 0:
		return []string{} // no file changed: nothing to compare
	case len(names) < 2:
		return nil // one file: all of it changed
	}
	set := map[string]bool{}
	for _, name := range scan {
		f, err := os.Open(name)
		if err != nil {
			return nil
		}
		r := bufio.NewReaderSize(f, 64<<10)
		for {
			rec, err := r.ReadString('\n')
			if rec == "" {
				break
			}
			if err != nil && err != io.EOF {
				f.Close()
				return nil
			}
			if rec[0] == kindIRI {
				k, _, _ := strings.Cut(rec[1:], "\x00")
				set[k] = true
				if len(set) > affectedMax {
					f.Close()
					return nil
				}
			}
		}
		f.Close()
	}
	if len(set) == 0 {
		return []string{} // nothing to compare, not everything
	}
	return slices.Sorted(maps.Keys(set))
}

// form returns the sha, size and (when at hand) bytes of iri's fragment
// in nv from its subject's lines, writing the form of a fragment with
// blank nodes to the cache cw and keeping its bytes when costly.
func (c *Collection) form(nv *version, iri string, lines []string, prevRec *cacheRec, prev *version, left *int64, cw *bufio.Writer) (sha [32]byte, size int64, nt []byte, err error) {
	if !slices.ContainsFunc(lines, hasBlankLine) {
		// Canonical already: the lines sorted, no blank node.
		h := sha256.New()
		for _, l := range lines {
			io.WriteString(h, l)
			size += int64(len(l))
		}
		return [32]byte(h.Sum(nil)), size, []byte(strings.Join(lines, "")), nil
	}
	ls, err := nv.gf.closureLines(lines)
	if err != nil {
		return sha, 0, nil, err
	}
	cr, err := c.fragmentForm(rdf.IRI(iri), ls, prevRec, prev, left)
	if err != nil {
		return sha, 0, nil, err
	}
	if cr.kept {
		if cr.nt != nil && (prevRec == nil || prevRec.raw != cr.raw) {
			// New bytes: appended to the kept file, which versions share
			// (rewritten at every start).
			if _, err := c.keptF.WriteAt(cr.nt, c.keptOff); err != nil {
				return sha, 0, nil, err
			}
			cr.koff, cr.klen = c.keptOff, int64(len(cr.nt))
			c.keptOff += cr.klen
		}
		nv.kept[iri] = keptRef{cr.koff, cr.klen, cr.over}
	}
	if _, err := cw.WriteString(cr.line()); err != nil {
		return sha, 0, nil, err
	}
	return cr.sha, cr.size, cr.nt, nil
}

// fragmentMD5 returns the MD5 of iri's N-Triples in nv (which is not
// published yet, so no request holds it).
func (c *Collection) fragmentMD5(nv *version, iri string) ([16]byte, error) {
	if k, ok := nv.kept[iri]; ok {
		nt, err := nv.keptNT(k)
		return md5.Sum(nt), err
	}
	fts, err := nv.gf.fragment(rdf.IRI(iri))
	if err != nil {
		return [16]byte{}, err
	}
	_, nt := canonical(fts)
	return md5.Sum(nt), nil
}
