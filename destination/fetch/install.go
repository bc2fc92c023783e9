package fetch

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/storage"
	"github.com/resourcesync-go/resourcesync/storage/local"
)

// Permissions of what Install creates, less the umask (the kernel applies
// it at creation), as cp, rsync and wget do.
const (
	FilePerm = 0o666
	DirPerm  = 0o777
)

// Errors matched with errors.Is.
var (
	// ErrSymlinkInDest: a component of a path in the destination is a
	// symbolic link; nothing is written, read or deleted through it.
	ErrSymlinkInDest = errors.New("symbolic link inside the destination")
	// ErrOutsideDir: a path given to a Dir is not below it.
	ErrOutsideDir = errors.New("path outside the destination")
)

// SymlinkError names the symbolic link met inside a Dir.
type SymlinkError struct {
	Path string // the link, as an absolute path
	Op   string // "write", "read" or "delete"
}

func (e *SymlinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link; refusing to %s through it", e.Path, e.Op)
}

func (e *SymlinkError) Unwrap() error { return ErrSymlinkInDest }

// Dir is a destination directory that is only ever accessed through a
// handle on it (os.Root): no path, however it was swapped since it was
// checked, reaches outside it. Besides, no symbolic link inside it is
// followed, even one pointing inside: every component of a path is
// checked first (a link swapped in after the check still cannot lead
// outside; Install then writes through a handle on the parent directory).
// A Dir is safe for concurrent use.
type Dir struct {
	root *os.Root
	path string
	fd   int // the same directory for the fast path (Linux), or -1
	// noTmpfile: its file system refused O_TMPFILE once (fast_linux.go);
	// files are written under temporary names from then on.
	noTmpfile   atomic.Bool
	tmpfileOnce sync.Once // probeTmpfile
}

// OpenDir opens the directory at path.
func OpenDir(path string) (*Dir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	return &Dir{root: r, path: abs, fd: rawRoot(abs, r)}, nil
}

// Path returns the directory's absolute path.
func (d *Dir) Path() string { return d.path }

// Close releases the handle.
func (d *Dir) Close() error {
	closeRaw(d.fd)
	d.fd = -1
	return d.root.Close()
}

// Rel returns the slash-separated path of abs (absolute, or relative to
// the Dir) inside the Dir.
func (d *Dir) Rel(abs string) (string, error) {
	rel := abs
	if filepath.IsAbs(abs) {
		var err error
		if rel, err = filepath.Rel(d.path, abs); err != nil {
			return "", fmt.Errorf("%w: %s", ErrOutsideDir, abs)
		}
	}
	if rel == "." || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%w: %s", ErrOutsideDir, abs)
	}
	return filepath.ToSlash(rel), nil
}

// check refuses symbolic links among the components of rel (the last one
// too when final is set). It stops at the first component that does not
// exist: what is created below it is created by us.
func (d *Dir) check(rel, op string, final bool) error {
	// One rule for every local mirror: the storage/local Target applies
	// the same function.
	link, err := local.CheckNoLink(d.root, rel, final)
	if err != nil {
		return err
	}
	if link != "" {
		return &SymlinkError{Path: filepath.Join(d.path, filepath.FromSlash(link)), Op: op}
	}
	return nil
}

// Parents keeps the directory of the last path resolved open (on Linux),
// so that a run of installs or stats in one directory does not resolve
// it again, component by component, for each file: pass it in
// Request.Parents or to LstatIn. It is held until a path in another
// directory is asked for or Close is called; a directory removed
// meanwhile is noticed by the next install, which resolves it again. A
// Parents is for one goroutine at a time; its zero value is ready.
type Parents struct {
	st parentsState
}

// Close releases the directory held.
func (c *Parents) Close() { c.close() }

// Lstat returns the file info of abs; a symbolic link at abs or among
// its parents is a *SymlinkError.
func (d *Dir) Lstat(abs string) (fs.FileInfo, error) { return d.LstatIn(abs, nil) }

// LstatIn is Lstat with the parent directory taken from c, or kept there
// for the next call (c may be nil).
func (d *Dir) LstatIn(abs string, c *Parents) (fs.FileInfo, error) {
	rel, err := d.Rel(abs)
	if err != nil {
		return nil, err
	}
	if fi, err := d.lstatFast(rel, c); err != errNoFast {
		return fi, err
	}
	if err := d.check(rel, "read", true); err != nil {
		return nil, err
	}
	return d.root.Lstat(rel)
}

// Open opens the regular file at abs for reading; a symbolic link at abs
// or among its parents is a *SymlinkError.
func (d *Dir) Open(abs string) (*os.File, error) {
	rel, err := d.Rel(abs)
	if err != nil {
		return nil, err
	}
	if f, err := d.openFast(rel); err != errNoFast {
		return f, err
	}
	if err := d.check(rel, "read", true); err != nil {
		return nil, err
	}
	return d.root.Open(rel)
}

// Remove removes the file at abs; a symbolic link at abs or among its
// parents is a *SymlinkError and nothing is removed.
func (d *Dir) Remove(abs string) error {
	rel, err := d.Rel(abs)
	if err != nil {
		return err
	}
	if err := d.check(rel, "delete", true); err != nil {
		return err
	}
	return d.root.Remove(rel)
}

// Link gives the file at abs the second name to (a hard link), where
// nothing is yet: an existing to is an error wrapping fs.ErrExist,
// unless it is that file already (nil). A
// symbolic link among the components of either is a *SymlinkError.
// sync --force keeps a file it replaces this way.
func (d *Dir) Link(abs, to string) error {
	rel, err := d.Rel(abs)
	if err != nil {
		return err
	}
	toRel, err := d.Rel(to)
	if err != nil {
		return err
	}
	if err := d.check(rel, "read", true); err != nil {
		return err
	}
	if err := d.check(toRel, "write", true); err != nil {
		return err
	}
	err = d.root.Link(rel, toRel)
	if errors.Is(err, fs.ErrExist) {
		// The second name made already, by a run killed before it
		// replaced the first: done.
		if d.SameFile(abs, to) {
			return nil
		}
	}
	return err
}

// SameFile reports whether abs and to are two names of one file (neither
// reached through a symbolic link).
func (d *Dir) SameFile(abs, to string) bool {
	rel, err := d.Rel(abs)
	if err != nil {
		return false
	}
	toRel, err := d.Rel(to)
	if err != nil || d.check(rel, "read", true) != nil || d.check(toRel, "read", true) != nil {
		return false
	}
	a, aerr := d.root.Lstat(rel)
	b, berr := d.root.Lstat(toRel)
	return aerr == nil && berr == nil && os.SameFile(a, b)
}

// Rename moves the file at abs to to, only where nothing is at to (an
// error wrapping fs.ErrExist otherwise; checked just before the rename,
// so a file created in between would be replaced). For file systems
// without hard links (Link).
func (d *Dir) Rename(abs, to string) error {
	rel, err := d.Rel(abs)
	if err != nil {
		return err
	}
	toRel, err := d.Rel(to)
	if err != nil {
		return err
	}
	if err := d.check(rel, "write", true); err != nil {
		return err
	}
	if err := d.check(toRel, "write", true); err != nil {
		return err
	}
	if _, err := d.root.Lstat(toRel); err == nil {
		return &fs.PathError{Op: "rename", Path: to, Err: fs.ErrExist}
	}
	return d.root.Rename(rel, toRel)
}

// RemoveEmptyParents removes the directories between abs and the Dir that
// are empty, deepest first, and stops at the first that is not (or is a
// symbolic link).
func (d *Dir) RemoveEmptyParents(abs string) {
	rel, err := d.Rel(abs)
	if err != nil {
		return
	}
	for p := path.Dir(rel); p != "."; p = path.Dir(p) {
		if d.check(p, "delete", true) != nil {
			return
		}
		// One already gone (a run killed while it removed them) does
		// not keep its emptied parents.
		if err := d.root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return
		}
	}
}

// Install streams body into a temporary file beside req.Path while
// hashing it, verifies length and hashes as Fetch does, and renames it into
// place. req.URLs is not used. It serves bodies that do not come from a
// GET, such as the members of a dump. An error wrapping ErrHashMismatch or
// ErrLengthMismatch means the bytes were wrong, one wrapping
// rs.ErrDigestEncoding or rs.ErrDigestConflict that the Source's digests
// cannot be trusted, one wrapping ErrSymlinkInDest that the path leads
// through a symbolic link; in every case nothing was installed.
func Install(body io.Reader, req Request) (Result, error) {
	return InstallContext(context.Background(), body, req)
}

// InstallContext is Install with a context for a Request.Target.
func InstallContext(ctx context.Context, body io.Reader, req Request) (Result, error) {
	dg, err := rs.DecodeDigests(req.Hashes)
	if err != nil {
		return Result{}, retry.Permanent(err)
	}
	if req.Target != nil {
		return installTarget(ctx, body, req, dg)
	}
	d := req.Dir
	if d == nil {
		dir := filepath.Dir(req.Path)
		if err := os.MkdirAll(dir, DirPerm); err != nil {
			return Result{}, retry.Permanent(err)
		}
		if d, err = OpenDir(dir); err != nil {
			return Result{}, retry.Permanent(err)
		}
		defer d.Close()
	}
	rel, err := d.Rel(req.Path)
	if err != nil {
		return Result{}, retry.Permanent(err)
	}
	if t, err := d.createFast(rel, req.Parents); err == nil {
		defer t.release()
		res, err := copyVerify(body, t, req, dg)
		if err != nil {
			return Result{}, err
		}
		if err := t.finish(req.ModTime, req.NoSync, req.NoReplace); err != nil {
			if err == errExistsAtName {
				err = fmt.Errorf("%w: %s", ErrExists, req.Path)
			}
			if err == errLinkAtName {
				err = &SymlinkError{Path: filepath.Join(d.path, filepath.FromSlash(rel)), Op: "write"}
			}
			return Result{}, retry.Permanent(err)
		}
		return res, nil
	}
	if err := d.check(rel, "write", true); err != nil {
		return Result{}, retry.Permanent(err)
	}
	// Work in a handle on the parent directory: whatever happens to the
	// path's components from now on, the file lands in that directory.
	dirRel, base := path.Split(rel)
	dirRel = strings.TrimSuffix(dirRel, "/")
	parent, tmp, tmpName, err := d.createIn(rel, dirRel)
	if err != nil {
		return Result{}, retry.Permanent(err)
	}
	if parent != d.root {
		defer parent.Close()
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			parent.Remove(tmpName)
		}
	}()
	res, err := copyVerify(body, tmp, req, dg)
	if err != nil {
		return Result{}, err
	}
	if !req.NoSync {
		if err := tmp.Sync(); err != nil {
			return Result{}, retry.Permanent(err)
		}
	}
	if err := tmp.Close(); err != nil {
		return Result{}, retry.Permanent(err)
	}
	if !req.ModTime.IsZero() {
		if err := parent.Chtimes(tmpName, req.ModTime, req.ModTime); err != nil {
			return Result{}, retry.Permanent(err)
		}
	}
	if req.NoReplace {
		if _, err := parent.Lstat(base); err == nil {
			return Result{}, retry.Permanent(fmt.Errorf("%w: %s", ErrExists, req.Path))
		}
	}
	if err := parent.Rename(tmpName, base); err != nil {
		return Result{}, retry.Permanent(err)
	}
	done = true
	return res, nil
}

// installTarget streams body into req.Target under req.Key, verifying it
// as Install does, and commits it only when it matched. A storage that
// refuses the object (storage.ErrRefused, ErrBadKey) or cannot write it
// fails permanently (no other location helps); bytes the storage found
// different from the digests given (storage.ErrIntegrity: changed on the
// way) are retried as a hash mismatch.
func installTarget(ctx context.Context, body io.Reader, req Request, dg rs.Digests) (Result, error) {
	opt := storage.PutOptions{Size: -1, ModTime: req.ModTime, MD5: dg.MD5, SHA256: dg.SHA256, ContentType: req.ContentType,
		NoReplace: req.NoReplace, IfVersion: req.IfVersion, NoSync: req.NoSync}
	if req.HasLength {
		opt.Size = req.Length
	}
	w, err := req.Target.Create(ctx, req.Key, opt)
	if err != nil {
		return Result{}, retry.Permanent(err)
	}
	res, err := copyVerify(body, w, req, dg)
	if err != nil {
		w.Abort()
		return Result{}, err
	}
	in, err := w.Commit(ctx)
	switch {
	case errors.Is(err, storage.ErrIntegrity):
		return Result{}, fmt.Errorf("%w: %w", ErrHashMismatch, err)
	case errors.Is(err, storage.ErrExists):
		return Result{}, retry.Permanent(fmt.Errorf("%w: %s: %w", ErrExists, req.Key, err))
	case err != nil:
		if ctx.Err() != nil {
			return Result{}, err
		}
		return Result{}, retry.Permanent(err)
	}
	res.Info = in
	return res, nil
}

// copyBufs holds the buffers copyVerify reads bodies into.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// copyVerify copies body to w while hashing it and verifies length and
// digests as Install documents. A write error is permanent; a read error
// is the body's (retried).
func copyVerify(body io.Reader, w io.Writer, req Request, dg rs.Digests) (Result, error) {
	var hs []hash.Hash
	var m5, s1, s256 hash.Hash
	if dg.MD5 != nil {
		m5 = md5.New()
		hs = append(hs, m5)
	}
	if dg.SHA1 != nil {
		s1 = sha1.New()
		hs = append(hs, s1)
	}
	// sha-256 is computed when offered, or when nothing else is, so that
	// every installed file has at least one digest to audit it by.
	if dg.SHA256 != nil || (m5 == nil && s1 == nil) {
		s256 = sha256.New()
		hs = append(hs, s256)
	}
	src := body
	if req.HasLength {
		// Read one byte past the expected length to detect a longer body
		// without trusting the server to stop.
		src = io.LimitReader(body, req.Length+1)
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var n int64
	for eof := false; !eof; {
		// Fill the buffer before writing it: a small file is one write.
		m, err := io.ReadFull(src, buf)
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			eof = true
		case err != nil:
			return Result{}, fmt.Errorf("reading body after %d bytes: %w", n+int64(m), err)
		}
		if m == 0 {
			break
		}
		for _, h := range hs {
			h.Write(buf[:m])
		}
		if _, err := w.Write(buf[:m]); err != nil {
			return Result{}, retry.Permanent(err)
		}
		n += int64(m)
	}
	if req.HasLength && n != req.Length {
		return Result{}, fmt.Errorf("%w: got %d bytes, expected %d", ErrLengthMismatch, n, req.Length)
	}
	res := Result{Length: n, Unverified: dg.Unknown}
	for _, c := range [...]struct {
		alg  string
		h    hash.Hash
		want []byte
		dst  *string
	}{{rs.SHA256, s256, dg.SHA256, &res.SHA256}, {rs.MD5, m5, dg.MD5, &res.MD5}, {rs.SHA1, s1, dg.SHA1, &res.SHA1}} {
		if c.h == nil {
			continue
		}
		got := c.h.Sum(nil)
		*c.dst = hex.EncodeToString(got)
		if c.want != nil && string(got) != string(c.want) {
			return Result{}, fmt.Errorf("%w: %s %s, expected %s", ErrHashMismatch, c.alg, *c.dst, hex.EncodeToString(c.want))
		}
	}
	return res, nil
}

func tempName() string { return TempPrefix + strconv.FormatUint(rand.Uint64(), 36) }

const createTries = 100

// createIn opens the parent directory dirRel of rel ("" for the Dir
// itself), creating it when missing, and a temporary file in it. Empty
// directories may be removed meanwhile (RemoveEmptyParents, for a
// deletion in the same pass): one removed between its creation and the
// temporary file's (which makes it non-empty) is made again, up to
// createTries times (bounded, not few: a starved CPU can lose that race
// to a busy remover several times in a row).
func (d *Dir) createIn(rel, dirRel string) (parent *os.Root, tmp *os.File, tmpName string, err error) {
	for range createTries {
		parent = d.root
		if dirRel != "" {
			parent, err = d.root.OpenRoot(dirRel)
			if errors.Is(err, fs.ErrNotExist) {
				// Directories are created on demand: most files land in
				// one that exists already, and a stat per file costs.
				if err = d.root.MkdirAll(dirRel, DirPerm); err == nil {
					if err = d.check(rel, "write", true); err == nil {
						parent, err = d.root.OpenRoot(dirRel)
					}
				}
			}
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, nil, "", err
			}
		}
		tmp, tmpName, err = createTemp(parent)
		if err == nil {
			return parent, tmp, tmpName, nil
		}
		if parent != d.root {
			parent.Close()
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, "", err
		}
	}
	return nil, nil, "", err
}

// createTemp creates a new temporary file in dir, FilePerm less the umask
// (os.CreateTemp would make it 0600, and the rename would keep that).
func createTemp(dir *os.Root) (*os.File, string, error) {
	for range 10000 {
		name := tempName()
		f, err := dir.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, FilePerm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", &os.PathError{Op: "createtemp", Path: TempPrefix + "*", Err: fs.ErrExist}
}

// CleanTemp removes temporary files a Fetcher left under root (after a
// crash) and returns how many it removed. Symbolic links are not followed.
// It is storage/local's: one rule for every local mirror.
func CleanTemp(root string) (int, error) { return local.CleanTemp(root) }
