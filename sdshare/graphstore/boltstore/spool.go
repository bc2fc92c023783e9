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
	"strings"

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

// A spooled term: its kind, its value (a uvarint length and the bytes),
// and for a literal a byte for its datatype: the two every plain literal
// has (xsd:string, or rdf:langString and then its language), or any
// other, written out. So the spool of N-Triples is about as long as
// their text, not half as long again.
const (
	dtOther = iota
	dtString
	dtLangString
)

func appendSpoolTerm(b []byte, t rdf.Term) []byte {
	b = append(b, byte(t.Kind))
	b = appendSpoolString(b, t.Value)
	if t.Kind != rdf.KindLiteral {
		return b
	}
	switch {
	case t.Datatype == rdf.XSDString && t.Lang == "":
		return append(b, dtString)
	case t.Datatype == rdf.RDFLangString:
		return appendSpoolString(append(b, dtLangString), t.Lang)
	}
	return appendSpoolString(appendSpoolString(append(b, dtOther), t.Datatype), t.Lang)
}

func appendSpoolString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func readSpoolTerm(r *bufio.Reader) (rdf.Term, error) {
	k, err := r.ReadByte()
	if err != nil {
		return rdf.Term{}, noEOF(err)
	}
	t := rdf.Term{Kind: rdf.Kind(k)}
	if t.Value, err = readSpoolString(r); err != nil || t.Kind != rdf.KindLiteral {
		return t, err
	}
	dt, err := r.ReadByte()
	if err != nil {
		return t, noEOF(err)
	}
	switch dt {
	case dtString:
		t.Datatype = rdf.XSDString
	case dtLangString:
		t.Datatype = rdf.RDFLangString
		t.Lang, err = readSpoolString(r)
	case dtOther:
		if t.Datatype, err = readSpoolString(r); err == nil {
			t.Lang, err = readSpoolString(r)
		}
	default:
		err = fmt.Errorf("bad datatype code %d", dt)
	}
	return t, err
}

func readSpoolString(r *bufio.Reader) (string, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return "", noEOF(err)
	}
	if n <= 64<<10 {
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return "", noEOF(err)
		}
		return string(b), nil
	}
	// A long term grows its buffer as it is read, never more than the
	// spool holds (a damaged length cannot allocate more).
	var b strings.Builder
	if _, err := io.CopyN(&b, r, int64(n)); err != nil {
		return "", noEOF(err)
	}
	return b.String(), nil
}

// noEOF: the spool ends only after its last triple.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
