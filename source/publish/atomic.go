package publish

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// tmpPrefix starts the name of every temporary file Publish creates; files
// with this prefix left by a killed run are removed by the next run.
const tmpPrefix = ".tmp-"

// New files and directories get these permissions less the umask, as cp
// and rsync give them, so that a web server running as another user can
// serve the tree (os.CreateTemp would make every file 0600).
const (
	filePerm = 0o666
	dirPerm  = 0o777
)

// createTemp creates a new file named prefix and a random suffix in dir,
// with filePerm less the umask (the kernel applies it, so nothing reads
// the process-wide umask).
func createTemp(dir, prefix string) (*os.File, error) {
	for range 10000 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, filePerm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, &os.PathError{Op: "createtemp", Path: filepath.Join(dir, prefix+"*"), Err: fs.ErrExist}
}

// atomicFile is a file written under a temporary name in its final
// directory and renamed into place only when complete: a reader of the
// final name sees the old file or the whole new one, never a part.
type atomicFile struct {
	f     *os.File
	bw    *bufio.Writer
	final string // the document's path
	// stored is where the file is renamed to: final, or final+GzipSuffix
	// when the document is stored compressed (Config.GzipLists).
	stored string
	zw     *gzip.Writer // nil unless compressed
	err    error        // first write error, sticky
	done   bool         // flushed, synced and closed
	n      int64
	sha    hash.Hash // nil unless hashing was asked for: of the document's bytes, not of the compressed form
}

// createAtomic starts writing the file that will be at path. The directory
// is created if needed.
func createAtomic(path string, hashed bool) (*atomicFile, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	f, err := createTemp(dir, tmpPrefix+filepath.Base(path)+"-")
	if err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	a := &atomicFile{f: f, bw: getWriter(f), final: path, stored: path}
	if hashed {
		a.sha = sha256.New()
	}
	return a, nil
}

// GzipSuffix ends the name of a document stored compressed
// (Config.GzipLists): NAME.xml.gz holds the gzip member of NAME.xml's
// bytes, and source/server answers the URL of NAME.xml from it.
const GzipSuffix = ".gz"

// createAtomicGz is createAtomic for a document stored compressed when gz
// is set: the bytes written (and hashed, and counted) are the document's,
// the file holds them gzip-compressed (one member, fastest level: an XML
// list shrinks about 3.5 times at a small fraction of the cost of writing
// it) under path+GzipSuffix.
func createAtomicGz(path string, hashed, gz bool) (*atomicFile, error) {
	a, err := createAtomic(path, hashed)
	if err != nil || !gz {
		return a, err
	}
	a.stored = path + GzipSuffix
	a.zw, _ = gzip.NewWriterLevel(a.bw, gzip.BestSpeed) // a valid level: no error
	return a, nil
}

// writers holds the write buffers of finished atomic files: a run writes
// dozens of documents and companion pages, and a fresh 256 KiB buffer
// each (zeroed by the allocator) cost more than some of the writes.
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 256<<10) }}

func getWriter(f *os.File) *bufio.Writer {
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(f)
	return bw
}

// putWriter returns a's buffer to the pool; a must not be written after.
func (a *atomicFile) putWriter() {
	if a.bw != nil {
		a.bw.Reset(nil)
		writers.Put(a.bw)
		a.bw = nil
	}
}

func (a *atomicFile) Write(p []byte) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	if a.done {
		return 0, fmt.Errorf("publish: write %s: %w", a.final, os.ErrClosed)
	}
	var n int
	var err error
	if a.zw != nil {
		n, err = a.zw.Write(p)
	} else {
		n, err = a.bw.Write(p)
	}
	a.n += int64(n)
	if a.sha != nil {
		a.sha.Write(p[:n])
	}
	if err != nil {
		a.err = fmt.Errorf("publish: write %s: %w", a.final, err)
	}
	return n, a.err
}

// finish flushes, fsyncs and closes the temporary file without renaming it.
func (a *atomicFile) finish() error { return a.finishSync(true) }

// finishSync is finish, with the fsync only when sync is set.
func (a *atomicFile) finishSync(sync bool) error {
	if a.done {
		return a.err
	}
	a.done = true
	err := a.err
	if err == nil && a.zw != nil {
		err = a.zw.Close()
	}
	if err == nil {
		err = a.bw.Flush()
	}
	a.putWriter()
	if err == nil && sync {
		err = a.f.Sync()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err != nil && a.err == nil {
		a.err = fmt.Errorf("publish: write %s: %w", a.final, err)
	}
	return a.err
}

// commit finishes the file and renames it to its final name, then fsyncs
// the directory so that the rename itself is durable.
func (a *atomicFile) commit() error {
	if err := a.finish(); err != nil {
		a.abort()
		return err
	}
	if err := os.Rename(a.f.Name(), a.stored); err != nil {
		a.abort()
		return fmt.Errorf("publish: %w", err)
	}
	removeOtherForm(a.stored)
	return syncDir(filepath.Dir(a.stored))
}

// abort discards the temporary file.
func (a *atomicFile) abort() {
	if !a.done {
		a.done = true
		a.f.Close()
		a.putWriter()
	}
	os.Remove(a.f.Name())
}

// digest returns the length and sha-256 of what was written (hashed files
// only).
func (a *atomicFile) digest() (int64, []byte) {
	return a.n, a.sha.Sum(nil)
}

// removeOtherForm removes the document stored at path in its other form
// (NAME.xml.gz for NAME.xml, and the reverse), once path is in place: a
// document changes form when it moves in or out of GzipLists (a Resource
// List that grows into an index of parts, the setting changed). A reader
// (source/server, fileSHA) prefers the plain form, so a crash before the
// removal leaves at worst an older plain document read, which the
// Resource List's recorded sha-256 tells from the one the meta describes.
func removeOtherForm(path string) {
	if p, ok := strings.CutSuffix(path, GzipSuffix); ok {
		os.Remove(p)
	} else {
		os.Remove(path + GzipSuffix)
	}
}

// docExists reports whether the document at path is stored, plain or
// compressed.
func docExists(path string) bool { return exists(path) || exists(path+GzipSuffix) }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("publish: sync %s: %w", dir, err)
	}
	return nil
}

// writeAtomicLater writes the file at path with fill, atomically (a
// reader sees the old file or the new one, also after kill -9) but
// without fsync where the file system can be flushed whole (syncfs):
// the caller calls syncFS once after a batch of them, before it records
// the files in the meta. Elsewhere it is writeAtomic.
func writeAtomicLater(path string, fill func(w io.Writer) error) error {
	if !haveSyncfs {
		return writeAtomic(path, fill)
	}
	a, err := createAtomic(path, false)
	if err != nil {
		return err
	}
	if err := fill(a); err != nil {
		a.abort()
		return err
	}
	if err := a.finishSync(false); err != nil {
		a.abort()
		return err
	}
	if err := os.Rename(a.f.Name(), a.final); err != nil {
		a.abort()
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}

// writeAtomic writes the file at path with fill, atomically.
func writeAtomic(path string, fill func(w io.Writer) error) error {
	a, err := createAtomic(path, false)
	if err != nil {
		return err
	}
	if err := fill(a); err != nil {
		a.abort()
		return err
	}
	return a.commit()
}

// removeTemps removes the temporary files (and directories) a killed run
// left under root.
func removeTemps(root string) error {
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if !strings.HasPrefix(d.Name(), tmpPrefix) {
			return nil
		}
		if err := os.RemoveAll(p); err != nil {
			return err
		}
		if d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("publish: remove temporary files: %w", err)
	}
	return nil
}

// linkAtomic makes dst a hard link to src, atomically (a link under a
// temporary name renamed into place, then the directory fsynced): dst is
// the old file or src, never absent. src must be complete and durable and
// never written in place afterwards, since the two names share its
// bytes. It fails where the file system has no hard links (the caller
// then copies).
func linkAtomic(src, dst string) error {
	dir := filepath.Dir(dst)
	tmp := filepath.Join(dir, tmpPrefix+filepath.Base(dst)+"-"+strconv.FormatUint(rand.Uint64(), 36))
	if err := os.Link(src, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	removeOtherForm(dst)
	return syncDir(dir)
}
