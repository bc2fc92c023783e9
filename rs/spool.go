package rs

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
)

// defaultSpoolMemory is how many bytes a spool keeps in memory before it
// moves its contents to a temporary file.
const defaultSpoolMemory = 4 << 20

// spool holds the encoded entries of a part whose head cannot be written
// yet: in memory up to limit bytes, then in a temporary file in dir. It is
// reused from part to part; close removes the file.
type spool struct {
	dir    string
	limit  int
	mem    bytes.Buffer
	f      *os.File      // nil until the contents first outgrow limit
	fw     *bufio.Writer // buffers writes to f
	onFile bool          // the contents are in f (and fw), not in mem
	n      int64         // bytes held
}

func (s *spool) Write(p []byte) (int, error) {
	if !s.onFile && s.mem.Len()+len(p) > s.limit {
		if s.f == nil {
			f, err := os.CreateTemp(s.dir, "rs-spool-*")
			if err != nil {
				return 0, fmt.Errorf("spool: %w", err)
			}
			s.f = f
			s.fw = bufio.NewWriterSize(f, 256<<10)
		}
		if _, err := s.mem.WriteTo(s.fw); err != nil {
			return 0, fmt.Errorf("spool: %w", err)
		}
		s.onFile = true
	}
	if s.onFile {
		n, err := s.fw.Write(p)
		s.n += int64(n)
		if err != nil {
			return n, fmt.Errorf("spool: %w", err)
		}
		return n, nil
	}
	n, _ := s.mem.Write(p)
	s.n += int64(n)
	return n, nil
}

// Len returns the number of bytes held.
func (s *spool) Len() int64 { return s.n }

// WriteTo copies the contents held to w. The spool keeps them until reset.
func (s *spool) WriteTo(w io.Writer) (int64, error) {
	if !s.onFile {
		n, err := w.Write(s.mem.Bytes())
		return int64(n), err
	}
	if err := s.fw.Flush(); err != nil {
		return 0, fmt.Errorf("spool: %w", err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("spool: %w", err)
	}
	n, err := io.Copy(w, io.LimitReader(s.f, s.n))
	if err == nil && n < s.n {
		err = fmt.Errorf("spool: %w", io.ErrUnexpectedEOF)
	}
	return n, err
}

// reset empties the spool, which then holds data in memory again. A
// temporary file is truncated and kept for when a later part outgrows
// memory too.
func (s *spool) reset() error {
	s.mem.Reset()
	s.n = 0
	if !s.onFile {
		return nil
	}
	s.onFile = false
	s.fw.Reset(s.f)
	if err := s.f.Truncate(0); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	return nil
}

// close removes the temporary file, if any.
func (s *spool) close() error {
	s.mem = bytes.Buffer{}
	s.n = 0
	s.onFile = false
	if s.f == nil {
		return nil
	}
	name := s.f.Name()
	err := s.f.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	s.f = nil
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	return nil
}
