package publish

import (
	"bufio"
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
	final string
	err   error // first write error, sticky
	done  bool  // flushed, synced and closed
	n     int64
	sha   hash.Hash // nil unless hashing was asked for
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
	a := &atomicFile{f: f, bw: bufio.NewWriterSize(f, 256<<10), final: path}
	if hashed {
		a.sha = sha256.New()
	}
	return a, nil
}

func (a *atomicFile) Write(p []byte) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	n, err := a.bw.Write(p)
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
	if err == nil {
		err = a.bw.Flush()
	}
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
	if err := os.Rename(a.f.Name(), a.final); err != nil {
		a.abort()
		return fmt.Errorf("publish: %w", err)
	}
	return syncDir(filepath.Dir(a.final))
}

// abort discards the temporary file.
func (a *atomicFile) abort() {
	if !a.done {
		a.done = true
		a.f.Close()
	}
	os.Remove(a.f.Name())
}

// digest returns the length and sha-256 of what was written (hashed files
// only).
func (a *atomicFile) digest() (int64, []byte) {
	return a.n, a.sha.Sum(nil)
}

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
	return syncDir(dir)
}
