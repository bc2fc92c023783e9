package server

import (
	"bufio"
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// A collection's graph lives on disk, not in memory (issue 23: 3.3 GiB at
// a million triples). A load stream-parses the files into records
// "KEY\x00LINE\n" (KEY is '1' and the IRI of an IRI subject, '2' and the
// label of a blank one; LINE the statement in N-Triples), sorts them
// externally (runs of sortRunBytes, then a merge) and writes them, without
// duplicates, to one graph file: every subject's statements together,
// IRI subjects first in IRI order (the inventory's), each group's lines
// sorted as rdf.Canonical sorts a fragment without blank nodes. A sparse
// index (every indexEvery-th subject's key and offset) finds a subject
// with one ReadAt; nothing is mapped, so the pages read stay in the page
// cache and out of the process's RSS.

// sortRunBytes is the size of one sorted run: the loader's memory is
// about this much (plus the Go heap's slack), whatever the collection's
// size.
var sortRunBytes = 8 << 20

// indexEvery is the number of subjects per sparse index entry.
const indexEvery = 32

// Record kinds: the first byte of a key.
const (
	kindIRI   = '1'
	kindBlank = '2'
)

// termKey returns the record key of subject s.
func termKey(s rdf.Term) string {
	if s.IsBlank() {
		return string(kindBlank) + s.Value
	}
	return string(kindIRI) + s.Value
}

// errKey is a subject that a record key cannot hold.
var errKey = errors.New("subject with a NUL or line break")

// record returns t's graph record.
func record(t rdf.Triple) (string, error) {
	if strings.ContainsAny(t.S.Value, "\x00\n") {
		return "", errKey
	}
	return termKey(t.S) + "\x00" + strings.TrimSuffix(ntLine(t), "\n") + "\n", nil
}

// splitRecord returns a record's key and its line with the newline.
func splitRecord(rec string) (key, line string) {
	key, line, _ = strings.Cut(rec, "\x00")
	return key, line
}

// sorter sorts records externally: runs of sortRunBytes in temporary
// files in dir, merged on read.
type sorter struct {
	dir  string
	buf  []string
	size int
	runs []string
}

func (s *sorter) add(rec string) error {
	s.buf = append(s.buf, rec)
	s.size += len(rec) + 16
	if s.size >= sortRunBytes {
		return s.spill()
	}
	return nil
}

func (s *sorter) spill() error {
	slices.Sort(s.buf)
	f, err := os.CreateTemp(s.dir, ".run-*")
	if err != nil {
		return err
	}
	s.runs = append(s.runs, f.Name())
	w := bufio.NewWriterSize(f, 64<<10)
	for _, r := range s.buf {
		w.WriteString(r)
	}
	err = errors.Join(w.Flush(), f.Close())
	s.buf, s.size = nil, 0
	return err
}

// close removes the run files.
func (s *sorter) close() {
	for _, r := range s.runs {
		os.Remove(r)
	}
	s.runs = nil
}

// each yields every record once, in order.
func (s *sorter) each(yield func(rec string) error) error {
	if len(s.runs) == 0 {
		slices.Sort(s.buf)
		last := ""
		for _, r := range s.buf {
			if r == last {
				continue
			}
			last = r
			if err := yield(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.buf) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	return mergeFiles(s.dir, s.runs, yield)
}

// mergeWidth is the most files merged at once (open files, buffers):
// more are merged in rounds through temporary files.
var mergeWidth = 64

// mergeFiles yields the records of sorted files once each, in order.
func mergeFiles(dir string, names []string, yield func(rec string) error) error {
	if len(names) > mergeWidth {
		var tmp []string
		defer func() {
			for _, t := range tmp {
				os.Remove(t)
			}
		}()
		for i := 0; i < len(names); i += mergeWidth {
			f, err := os.CreateTemp(dir, ".merge-*")
			if err != nil {
				return err
			}
			tmp = append(tmp, f.Name())
			w := bufio.NewWriterSize(f, 64<<10)
			err = mergeFiles(dir, names[i:min(i+mergeWidth, len(names))], func(rec string) error {
				_, err := w.WriteString(rec)
				return err
			})
			if err = errors.Join(err, w.Flush(), f.Close()); err != nil {
				return err
			}
		}
		return mergeFiles(dir, tmp, yield)
	}
	h := &runHeap{}
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		r := &run{r: bufio.NewReaderSize(f, 32<<10)}
		if ok, err := r.next(); err != nil {
			return err
		} else if ok {
			h.rs = append(h.rs, r)
		}
	}
	heap.Init(h)
	last := ""
	for len(h.rs) > 0 {
		r := h.rs[0]
		rec := r.cur
		if rec != last {
			last = rec
			if err := yield(rec); err != nil {
				return err
			}
		}
		ok, err := r.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return nil
}

type run struct {
	r   *bufio.Reader
	cur string
}

func (r *run) next() (bool, error) {
	s, err := r.r.ReadString('\n')
	if err == io.EOF && s == "" {
		return false, nil
	}
	if err != nil && err != io.EOF {
		return false, err
	}
	r.cur = s
	return true, nil
}

type runHeap struct{ rs []*run }

func (h *runHeap) Len() int           { return len(h.rs) }
func (h *runHeap) Less(i, j int) bool { return h.rs[i].cur < h.rs[j].cur }
func (h *runHeap) Swap(i, j int)      { h.rs[i], h.rs[j] = h.rs[j], h.rs[i] }
func (h *runHeap) Push(x any)         { h.rs = append(h.rs, x.(*run)) }
func (h *runHeap) Pop() any {
	r := h.rs[len(h.rs)-1]
	h.rs = h.rs[:len(h.rs)-1]
	return r
}

// indexEntry is one sparse index entry: a subject's key and the offset
// of its first record.
type indexEntry struct {
	key string
	off int64
}

// graphFile is one version's graph on disk, read-only once written.
type graphFile struct {
	f     *os.File
	name  string       // removed with the last reference (unref)
	refs  atomic.Int32 // the graphs holding it
	size  int64
	index []indexEntry
	// triples, subjects and resources (IRI subjects) it holds.
	triples, subjects, resources int
}

// graphWriter writes a graph file from sorted, distinct records.
type graphWriter struct {
	gf      *graphFile
	w       *bufio.Writer
	off     int64
	lastKey string
	hash    io.Writer // every line, in order: the version hash
}

func newGraphWriter(name string, hash io.Writer) (*graphWriter, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	gf := &graphFile{f: f, name: name}
	gf.refs.Store(1)
	return &graphWriter{gf: gf, w: bufio.NewWriterSize(f, 256<<10), hash: hash}, nil
}

func (gw *graphWriter) add(rec string) error {
	key, line := splitRecord(rec)
	if key != gw.lastKey || gw.gf.subjects == 0 {
		if gw.gf.subjects%indexEvery == 0 {
			gw.gf.index = append(gw.gf.index, indexEntry{key, gw.off})
		}
		gw.gf.subjects++
		if key[0] == kindIRI {
			gw.gf.resources++
		}
		gw.lastKey = key
	}
	gw.gf.triples++
	io.WriteString(gw.hash, line)
	n, err := gw.w.WriteString(rec)
	gw.off += int64(n)
	return err
}

// finish flushes the file and returns it, open for reading.
func (gw *graphWriter) finish() (*graphFile, error) {
	if err := gw.w.Flush(); err != nil {
		gw.gf.f.Close()
		return nil, err
	}
	gw.gf.size = gw.off
	gw.gf.index = slices.Clip(gw.gf.index)
	return gw.gf, nil
}

func (g *graphFile) close() error {
	if g == nil || g.f == nil {
		return nil
	}
	return g.f.Close()
}

// reader returns a record reader from offset off.
func (g *graphFile) reader(off int64, bufSize int) *bufio.Reader {
	return bufio.NewReaderSize(io.NewSectionReader(g.f, off, g.size-off), bufSize)
}

// lookupReaders are the small readers of lookups (lines) whose span is
// too large to read at once.
var lookupReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// spanMax is the largest span between two index entries that lines
// reads with one ReadAt: a few KB for ordinary subjects; a subject of
// very many statements is streamed instead.
const spanMax = 256 << 10

// spans are lines' buffers: a fragment request and a feed entry's label
// each read one span, so they are not allocated per request.
var spans = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// lines returns the N-Triples lines (with newlines) of the subject whose
// record key is key, in order; none when it has no statements.
//
// It reads the span between two sparse index entries (up to indexEvery
// subjects) with one ReadAt and copies out only the key's lines: read
// record by record through a small buffer, every record of the span was
// a string of its own, most of a fragment request's CPU on the server.
func (g *graphFile) lines(key string) ([]string, error) {
	i := sort.Search(len(g.index), func(i int) bool { return g.index[i].key > key }) - 1
	if i < 0 {
		return nil, nil
	}
	start, end := g.index[i].off, g.size
	if i+1 < len(g.index) {
		end = g.index[i+1].off
	}
	if end-start > spanMax {
		return g.linesStream(key, start)
	}
	bp := spans.Get().(*[]byte)
	defer spans.Put(bp)
	buf := slices.Grow((*bp)[:0], int(end-start))[:end-start]
	*bp = buf
	if _, err := g.f.ReadAt(buf, start); err != nil && !(err == io.EOF && len(buf) == 0) {
		return nil, err
	}
	var out []string
	for len(buf) > 0 {
		nl := bytes.IndexByte(buf, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("sdshare/server: graph file: record without a newline at offset %d", end-int64(len(buf)))
		}
		rec := buf[:nl+1]
		buf = buf[nl+1:]
		k, line, ok := bytes.Cut(rec, []byte{0})
		if !ok {
			return nil, fmt.Errorf("sdshare/server: graph file: record without a key at offset %d", end-int64(len(buf))-int64(len(rec)))
		}
		switch c := strings.Compare(string(k), key); {
		case c < 0:
			continue
		case c == 0:
			out = append(out, string(line))
		default:
			return out, nil
		}
	}
	return out, nil
}

// linesStream is lines for a span too large to read at once.
func (g *graphFile) linesStream(key string, off int64) ([]string, error) {
	r := lookupReaders.Get().(*bufio.Reader)
	r.Reset(io.NewSectionReader(g.f, off, g.size-off))
	defer func() {
		r.Reset(nil)
		lookupReaders.Put(r)
	}()
	var out []string
	for {
		rec, err := r.ReadString('\n')
		if err == io.EOF && rec == "" {
			return out, nil
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		k, line := splitRecord(rec)
		switch {
		case k < key:
			continue
		case k == key:
			out = append(out, line)
		default:
			return out, nil
		}
	}
}

// parseLines parses N-Triples lines the loader wrote (ntLine's: one
// space between the terms, " .\n" after them), term by term: rdf.Parse's
// reader is for documents, and a load parses one group per blank node.
func parseLines(ls []string) ([]rdf.Triple, error) {
	out := make([]rdf.Triple, 0, len(ls))
	var lastS, lastP string
	var s, p rdf.Term
	for _, l := range ls {
		body := strings.TrimSuffix(strings.TrimSuffix(l, "\n"), " .")
		st, rest, ok1 := strings.Cut(body, " ")
		pt, ot, ok2 := strings.Cut(rest, " ")
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("sdshare/server: graph file: malformed line %q", l)
		}
		var err error
		if st != lastS {
			if s, err = rdf.ParseTerm(st); err != nil {
				return nil, fmt.Errorf("sdshare/server: graph file: %w", err)
			}
			lastS = st
		}
		if pt != lastP {
			if p, err = rdf.ParseTerm(pt); err != nil {
				return nil, fmt.Errorf("sdshare/server: graph file: %w", err)
			}
			lastP = pt
		}
		o, err := rdf.ParseTerm(ot)
		if err != nil {
			return nil, fmt.Errorf("sdshare/server: graph file: %w", err)
		}
		out = append(out, rdf.Triple{S: s, P: p, O: o})
	}
	return out, nil
}

// group is one subject's statements in a graph file.
type group struct {
	key   string
	lines []string
}

// groups yields the graph file's subjects in order from offset off.
func (g *graphFile) groups(off int64, yield func(group) error) error {
	r := g.reader(off, 64<<10)
	var cur group
	for {
		rec, err := r.ReadString('\n')
		if err == io.EOF && rec == "" {
			break
		}
		if err != nil && err != io.EOF {
			return err
		}
		k, line := splitRecord(rec)
		if k != cur.key && cur.lines != nil {
			if err := yield(cur); err != nil {
				return err
			}
			cur = group{}
		}
		cur.key = k
		cur.lines = append(cur.lines, line)
	}
	if cur.lines != nil {
		return yield(cur)
	}
	return nil
}

// blankStart returns the offset of the first blank-node subject (or the
// file's size).
func (g *graphFile) blankStart() (int64, error) {
	i := sort.Search(len(g.index), func(i int) bool { return g.index[i].key[0] >= kindBlank }) - 1
	if i < 0 {
		return 0, nil
	}
	r := g.reader(g.index[i].off, 64<<10)
	off := g.index[i].off
	for {
		rec, err := r.ReadString('\n')
		if err == io.EOF && rec == "" {
			return off, nil
		}
		if err != nil && err != io.EOF {
			return 0, err
		}
		if rec[0] == kindBlank {
			return off, nil
		}
		off += int64(len(rec))
	}
}

// hasBlankLine reports whether an N-Triples line of the graph file has
// a blank node (subject or object).
func hasBlankLine(line string) bool {
	_, ok := blankObject(line)
	return ok || strings.HasPrefix(line, "_:")
}

// blankObject returns the label of a line's object when it is a blank
// node: the subject (an IRI or a blank node) and the predicate (an IRI)
// have no spaces.
func blankObject(line string) (string, bool) {
	_, rest, _ := strings.Cut(line, " ")
	_, rest, _ = strings.Cut(rest, " ")
	l, ok := strings.CutPrefix(rest, "_:")
	if !ok {
		return "", false
	}
	l, _, _ = strings.Cut(l, " ")
	return l, true
}

// indexDir is where a collection's graph files live.
func indexDir(stateDir, name string) string { return filepath.Join(stateDir, name+".graph") }
