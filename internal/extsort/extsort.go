package extsort

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// Default bounds.
const (
	// DefaultLimit is the bytes of records held before a run is written.
	DefaultLimit = 1 << 20
	// DefaultFanIn is the runs merged at once (the files open, each with
	// a buffer of bufSize).
	DefaultFanIn = 32
	bufSize      = 16 << 10
)

// ErrCorrupt is returned when a run file does not read back as written
// (the scratch space was damaged under the run).
var ErrCorrupt = errors.New("extsort: damaged run file")

// Sorter collects records and gives them back in order. It is not safe
// for concurrent use. Close removes its files.
type Sorter struct {
	// Dir and Pattern name the run files (os.CreateTemp).
	Dir, Pattern string
	// Dedupe keeps only the first record of each group.
	Dedupe bool
	// Limit and FanIn default to DefaultLimit and DefaultFanIn.
	Limit, FanIn int

	arena []byte
	recs  []rec
	runs  []run
	added int64
}

// rec is a record held in memory: its slices of the arena.
type rec struct{ off, g, r, p int }

type run struct {
	path  string
	level int
}

func (s *Sorter) limit() int {
	if s.Limit > 0 {
		return s.Limit
	}
	return DefaultLimit
}

func (s *Sorter) fanIn() int {
	if s.FanIn > 1 {
		return s.FanIn
	}
	return DefaultFanIn
}

// Add adds a record; the slices are copied.
func (s *Sorter) Add(group, rank, payload []byte) error {
	off := len(s.arena)
	s.arena = append(s.arena, group...)
	s.arena = append(s.arena, rank...)
	s.arena = append(s.arena, payload...)
	s.recs = append(s.recs, rec{off, len(group), len(rank), len(payload)})
	s.added++
	if len(s.arena)+len(s.recs)*32 >= s.limit() {
		return s.spill()
	}
	return nil
}

// Added is the number of records added (before any deduplication).
func (s *Sorter) Added() int64 { return s.added }

func (s *Sorter) parts(r rec) (g, k, p []byte) {
	a := s.arena[r.off:]
	return a[:r.g:r.g], a[r.g : r.g+r.r : r.g+r.r], a[r.g+r.r : r.g+r.r+r.p : r.g+r.r+r.p]
}

func compare(g1, r1, g2, r2 []byte) int {
	if c := bytes.Compare(g1, g2); c != 0 {
		return c
	}
	return bytes.Compare(r1, r2)
}

// spill writes the records held as a run, then merges runs so that no
// more than FanIn of one level remain.
func (s *Sorter) spill() error {
	if len(s.recs) == 0 {
		return nil
	}
	slices.SortStableFunc(s.recs, func(a, b rec) int {
		ga, ra, _ := s.parts(a)
		gb, rb, _ := s.parts(b)
		return compare(ga, ra, gb, rb)
	})
	f, w, err := s.create()
	if err != nil {
		return err
	}
	var last []byte
	for i, r := range s.recs {
		g, k, p := s.parts(r)
		if s.Dedupe && i > 0 && bytes.Equal(g, last) {
			continue
		}
		last = g
		writeRec(w, g, k, p)
	}
	if err := finish(f, w); err != nil {
		return err
	}
	s.runs = append(s.runs, run{path: f.Name()})
	s.arena, s.recs = s.arena[:0], s.recs[:0]
	// Runs are merged as a counter carries: FanIn runs of one level
	// become one of the next. The runs stay in the order their records
	// were added (levels never increase along the list), which keeps
	// ties in that order.
	for n := s.fanIn(); len(s.runs) >= n; {
		tail := s.runs[len(s.runs)-n:]
		lvl := tail[0].level
		if tail[n-1].level != lvl {
			break
		}
		if err := s.mergeTail(n, lvl+1); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sorter) create() (*os.File, *bufio.Writer, error) {
	f, err := os.CreateTemp(s.Dir, s.Pattern)
	if err != nil {
		return nil, nil, err
	}
	return f, bufio.NewWriterSize(f, 64<<10), nil
}

func finish(f *os.File, w *bufio.Writer) error {
	err := w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// mergeTail merges the last n runs into one of the given level.
func (s *Sorter) mergeTail(n, level int) error {
	tail := s.runs[len(s.runs)-n:]
	f, w, err := s.create()
	if err != nil {
		return err
	}
	err = s.merge(tail, func(g, k, p []byte) error {
		writeRec(w, g, k, p)
		return nil
	})
	if ferr := finish(f, w); err == nil {
		err = ferr
	} else {
		os.Remove(f.Name())
	}
	if err != nil {
		return err
	}
	for _, r := range tail {
		os.Remove(r.path)
	}
	s.runs = append(s.runs[:len(s.runs)-n], run{path: f.Name(), level: level})
	return nil
}

// Each calls fn with every record (the first of each group with Dedupe),
// in order, and returns fn's first error. The slices are valid only
// during the call. Records added later go to later calls; Each may be
// called again.
func (s *Sorter) Each(fn func(group, rank, payload []byte) error) error {
	if err := s.spill(); err != nil {
		return err
	}
	for len(s.runs) > s.fanIn() {
		if err := s.mergeTail(s.fanIn(), s.runs[len(s.runs)-s.fanIn()].level+1); err != nil {
			return err
		}
	}
	return s.merge(s.runs, fn)
}

// Close removes the run files.
func (s *Sorter) Close() {
	for _, r := range s.runs {
		os.Remove(r.path)
	}
	s.runs, s.arena, s.recs = nil, nil, nil
}

func writeRec(w *bufio.Writer, g, k, p []byte) {
	var b [3 * binary.MaxVarintLen64]byte
	n := binary.PutUvarint(b[:], uint64(len(g)))
	n += binary.PutUvarint(b[n:], uint64(len(k)))
	n += binary.PutUvarint(b[n:], uint64(len(p)))
	w.Write(b[:n]) // errors stay in w, returned by Flush
	w.Write(g)
	w.Write(k)
	w.Write(p)
}

// reader reads one run.
type reader struct {
	f       *os.File
	r       *bufio.Reader
	idx     int    // the run's place: ties go to the earlier run
	size    uint64 // the file's: no record is longer
	buf     []byte
	g, k, p []byte
}

// next reads the next record; io.EOF at the end.
func (r *reader) next() error {
	var l [3]uint64
	for i := range l {
		v, err := binary.ReadUvarint(r.r)
		if err == io.EOF && i == 0 {
			return io.EOF
		}
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrCorrupt, r.f.Name(), err)
		}
		l[i] = v
	}
	n := l[0] + l[1] + l[2]
	if l[0] > r.size || l[1] > r.size || l[2] > r.size || n > r.size {
		return fmt.Errorf("%w: %s: a record of %d bytes", ErrCorrupt, r.f.Name(), n)
	}
	if uint64(cap(r.buf)) < n {
		r.buf = make([]byte, n)
	}
	r.buf = r.buf[:n]
	if _, err := io.ReadFull(r.r, r.buf); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, r.f.Name(), err)
	}
	r.g, r.k, r.p = r.buf[:l[0]:l[0]], r.buf[l[0]:l[0]+l[1]:l[0]+l[1]], r.buf[l[0]+l[1]:]
	return nil
}

type mergeHeap []*reader

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if c := compare(h[i].g, h[i].k, h[j].g, h[j].k); c != 0 {
		return c < 0
	}
	return h[i].idx < h[j].idx
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(*reader)) }
func (h *mergeHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}

// merge calls fn with the records of runs in order (deduplicated with
// Dedupe).
func (s *Sorter) merge(runs []run, fn func(g, k, p []byte) error) error {
	h := make(mergeHeap, 0, len(runs))
	defer func() {
		for _, r := range h {
			r.f.Close()
		}
	}()
	for i, rn := range runs {
		f, err := os.Open(rn.path)
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		r := &reader{f: f, r: bufio.NewReaderSize(f, bufSize), idx: i, size: uint64(fi.Size())}
		if err := r.next(); err != nil {
			f.Close()
			if err == io.EOF {
				continue
			}
			return err
		}
		h = append(h, r)
	}
	heap.Init(&h)
	var last []byte
	started := false
	for len(h) > 0 {
		r := h[0]
		if !s.Dedupe || !started || !bytes.Equal(r.g, last) {
			if err := fn(r.g, r.k, r.p); err != nil {
				return err
			}
			if s.Dedupe {
				last = append(last[:0], r.g...)
				started = true
			}
		}
		switch err := r.next(); err {
		case nil:
			heap.Fix(&h, 0)
		case io.EOF:
			heap.Pop(&h)
			r.f.Close()
		default:
			return err
		}
	}
	return nil
}
