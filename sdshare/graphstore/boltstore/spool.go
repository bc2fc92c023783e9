package boltstore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// A snapshot is spooled before it is loaded. Its source (a server's
// snapshot, as the client streams it) may be refused part way: too long
// (an endless snapshot stopped at MaxSnapshotBytes), broken off, or
// invalid. Loaded as it arrives, the refused part had already grown the
// file: bbolt never gives pages back to the file system, so a 100 MiB
// cap left graph.db 801 MB larger (the dictionary and index of every
// triple cost about eight times its N-Triples text). Spooled first, a
// refused snapshot costs a temporary file of about its own size, deleted
// at once, and graph.db only grows by snapshots that are loaded whole.
//
// The spool is in the store's directory (the disk the store is on, not a
// /tmp that may be memory). Its name is unlinked as soon as it is open
// where the system allows it (POSIX), so a kill -9 leaves nothing; where
// it does not (Windows), Open deletes what a killed process left.

// spoolPattern is the name of a spool file of the store file base.
func spoolPattern(base string) string { return base + ".spool-*" }

// removeSpools deletes the spool files a killed process left next to path
// (the store's lock is held: no other process is spooling).
func removeSpools(path string) {
	ms, _ := filepath.Glob(filepath.Join(filepath.Dir(path), spoolPattern(filepath.Base(path))))
	for _, m := range ms {
		os.Remove(m)
	}
}

// spool is a snapshot written to a temporary file, read back once.
type spool struct {
	f       *os.File
	name    string
	removed bool // the name is gone already (unlinked while open)
	n       int64
}

// spoolTriples writes every triple of ts to a new spool file next to the
// store, checking each (graphstore.CheckTriple). An error of ts, of a
// triple or of ctx deletes the file and is returned.
func (s *Store) spoolTriples(ts iter.Seq2[rdf.Triple, error], canceled func() error) (_ *spool, err error) {
	f, err := os.CreateTemp(filepath.Dir(s.path), spoolPattern(filepath.Base(s.path)))
	if err != nil {
		return nil, fmt.Errorf("graph store %s: spooling the snapshot: %w", s.path, err)
	}
	sp := &spool{f: f, name: f.Name()}
	sp.removed = os.Remove(sp.name) == nil
	done := false
	defer func() {
		// An error, or a panic of ts: nothing is left.
		if !done {
			sp.close()
		}
	}()
	w := bufio.NewWriterSize(f, 64<<10)
	var buf []byte
	for t, terr := range ts {
		if terr != nil {
			return nil, terr
		}
		if err := graphstore.CheckTriple(t); err != nil {
			return nil, err
		}
		if sp.n++; sp.n%1024 == 0 {
			if err := canceled(); err != nil {
				return nil, err
			}
		}
		buf = appendSpoolTerm(appendSpoolTerm(appendSpoolTerm(buf[:0], t.S), t.P), t.O)
		if _, err := w.Write(buf); err != nil {
			return nil, fmt.Errorf("graph store %s: spooling the snapshot: %w", s.path, err)
		}
	}
	if err := w.Flush(); err != nil {
		return nil, fmt.Errorf("graph store %s: spooling the snapshot: %w", s.path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("graph store %s: spooling the snapshot: %w", s.path, err)
	}
	done = true
	return sp, nil
}

// close deletes the spool.
func (sp *spool) close() {
	sp.f.Close()
	if !sp.removed {
		os.Remove(sp.name)
	}
}

// triples reads the spool back, in the order written.
func (sp *spool) triples() iter.Seq2[rdf.Triple, error] {
	return func(yield func(rdf.Triple, error) bool) {
		r := bufio.NewReaderSize(sp.f, 64<<10)
		for i := int64(0); i < sp.n; i++ {
			var t rdf.Triple
			var err error
			if t.S, err = readSpoolTerm(r); err == nil {
				if t.P, err = readSpoolTerm(r); err == nil {
					t.O, err = readSpoolTerm(r)
				}
			}
			if err != nil {
				yield(rdf.Triple{}, fmt.Errorf("reading the spooled snapshot: %w", err))
				return
			}
			if !yield(t, nil) {
				return
			}
		}
	}
}

// A spooled term: its kind, then its value, language and datatype, each
// a uvarint length and the bytes.
func appendSpoolTerm(b []byte, t rdf.Term) []byte {
	b = append(b, byte(t.Kind))
	for _, s := range [...]string{t.Value, t.Lang, t.Datatype} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

func readSpoolTerm(r *bufio.Reader) (rdf.Term, error) {
	k, err := r.ReadByte()
	if err != nil {
		return rdf.Term{}, noEOF(err)
	}
	var f [3]string
	for i := range f {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return rdf.Term{}, noEOF(err)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return rdf.Term{}, noEOF(err)
		}
		f[i] = string(b)
	}
	return rdf.Term{Kind: rdf.Kind(k), Value: f[0], Lang: f[1], Datatype: f[2]}, nil
}

// noEOF: the spool ends only after its last triple.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
