package fetch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The fast path: on Linux, openat2(2) with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS resolves a whole path below DEST in one system call
// and refuses every symbolic link on the way, which is what Dir.check does
// one lstat per component (and os.Root one openat per component again).
// Files are then written with plain system calls on the descriptor: an
// install costs about eight system calls instead of about forty. Whatever
// the fast path does not handle plainly (a missing directory, a link, an
// error) falls back to the portable path, which says why.

// noOpenat2 is set when the kernel (or a seccomp filter) refuses
// openat2: the portable path is used from then on.
var noOpenat2 atomic.Bool

// rawRoot opens path as a descriptor for the fast path and checks that it
// is the directory root holds; -1 when there is none.
func rawRoot(path string, root *os.Root) int {
	if noOpenat2.Load() {
		return -1
	}
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	var st unix.Stat_t
	fi, err := root.Stat(".")
	rs, ok := fi.Sys().(*syscall.Stat_t)
	if err != nil || !ok || unix.Fstat(fd, &st) != nil || st.Dev != rs.Dev || st.Ino != rs.Ino {
		unix.Close(fd) // swapped between the two opens: no fast path
		return -1
	}
	return fd
}

func closeRaw(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}

// errNoFast tells the caller to take the portable path.
var errNoFast = errors.New("no fast path")

// errLinkAtName: the file was written but a symbolic link is at its name;
// the caller reports it as the portable path does.
var errLinkAtName = errors.New("symbolic link at the name")

// errExistsAtName: the file was written, NoReplace was asked and something
// is at its name.
var errExistsAtName = errors.New("something at the name")

// openBeneath opens rel (relative to the Dir, "" for the Dir itself)
// refusing any symbolic link and anything outside the Dir. An error is the
// kernel's errno.
func (d *Dir) openBeneath(rel string, flags int) (int, error) {
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(d.fd, rel, &how)
		switch err {
		case nil:
			return fd, nil
		case unix.EINTR, unix.EAGAIN: // EAGAIN: a concurrent rename; retried
			continue
		case unix.ENOSYS, unix.EPERM:
			// No openat2 here (an old kernel, a seccomp filter): the
			// portable path from now on.
			noOpenat2.Store(true)
		}
		return -1, err
	}
}

// parentsState is what a Parents holds on Linux: the descriptor of the
// directory last resolved and its path relative to the Dir.
type parentsState struct {
	d   *Dir
	rel string
	fd  int
}

func (c *Parents) close() {
	if c.st.d != nil {
		unix.Close(c.st.fd)
		c.st = parentsState{}
	}
}

// parent opens the directory dir (relative, "" or ending in a slash) for
// the fast path, or takes it from c: owned tells whether the caller
// closes it.
func (d *Dir) parent(dir string, c *Parents) (fd int, owned bool, err error) {
	if c != nil && c.st.d == d && c.st.rel == dir {
		return c.st.fd, false, nil
	}
	fd, err = d.openBeneath(dir, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return -1, false, err
	}
	if c == nil {
		return fd, true, nil
	}
	c.close()
	c.st = parentsState{d: d, rel: dir, fd: fd}
	return fd, false, nil
}

// lstatFast is Lstat on the fast path. errNoFast: take the portable path.
func (d *Dir) lstatFast(rel string, c *Parents) (fs.FileInfo, error) {
	if d.fd < 0 || noOpenat2.Load() {
		return nil, errNoFast
	}
	dir, base := filepath.Split(rel)
	pfd, owned, err := d.parent(dir, c)
	if err != nil {
		if err == unix.ENOENT || err == unix.ENOTDIR {
			// A parent is missing (or a file): so is the path. A link among
			// the parents gives ELOOP, which the portable path names.
			return nil, &fs.PathError{Op: "lstat", Path: rel, Err: err}
		}
		return nil, errNoFast
	}
	if owned {
		defer unix.Close(pfd)
	}
	fi := &statInfo{name: base}
	st := (*unix.Stat_t)(unsafe.Pointer(&fi.st)) // the same struct stat (sizes asserted below)
	if err := retryEINTR(func() error { return unix.Fstatat(pfd, base, st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: rel, Err: err}
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, errNoFast // the portable path makes the *SymlinkError
	}
	return fi, nil
}

// openFast is Open on the fast path.
func (d *Dir) openFast(rel string) (*os.File, error) {
	if d.fd < 0 || noOpenat2.Load() {
		return nil, errNoFast
	}
	fd, err := d.openBeneath(rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK)
	if err != nil {
		if err == unix.ENOENT {
			return nil, &fs.PathError{Op: "open", Path: rel, Err: err}
		}
		return nil, errNoFast
	}
	// O_NONBLOCK kept a FIFO swapped in from blocking the open; reads of
	// regular files ignore it.
	return os.NewFile(uintptr(fd), filepath.Join(d.path, rel)), nil
}

// fastTemp is a file being written on the fast path, in the directory
// pfd, to be given the name base. On file systems that have O_TMPFILE
// (ext4, xfs, btrfs, tmpfs, …) it has no name at all until it is
// complete: linkat gives it its final name, so a run killed meanwhile
// leaves nothing behind, and a new file costs no rename (the temporary
// name's directory entry is never made nor removed). Elsewhere it is a
// temporary name beside base, renamed into place.
type fastTemp struct {
	pfd, fd    int
	ownPfd     bool   // pfd is closed by release (not a Parents')
	unnamed    bool   // O_TMPFILE: name stays "" until finish links it
	name, base string // name: the temporary name, "" when none exists
	path       string // for errors
	d          *Dir
	dir        string // base's directory relative to the Dir ("" or ending in "/")
}

// createFast opens the parent directory of rel and creates the file to
// write in it. errNoFast: take the portable path (nothing was created).
func (d *Dir) createFast(rel string, c *Parents) (*fastTemp, error) {
	if d.fd < 0 || noOpenat2.Load() {
		return nil, errNoFast
	}
	dir, base := filepath.Split(rel)
	pfd, owned, err := d.parent(dir, c)
	if err != nil {
		return nil, errNoFast // missing (created by the portable path), a link, …
	}
	t := &fastTemp{pfd: pfd, ownPfd: owned, base: base, path: filepath.Join(d.path, rel), d: d, dir: dir}
	d.tmpfileOnce.Do(func() { d.probeTmpfile(pfd) })
	if !d.noTmpfile.Load() {
		// The mode is FilePerm less the umask, as for a named file.
		fd, err := retryEINTRFd(func() (int, error) {
			return unix.Openat(pfd, ".", unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC, FilePerm)
		})
		switch err {
		case nil:
			t.fd, t.unnamed = fd, true
			return t, nil
		case unix.EOPNOTSUPP, unix.EISDIR, unix.EINVAL:
			// This file system (or an old kernel: EISDIR) has no
			// O_TMPFILE: named temporary files for this Dir from now on.
			d.noTmpfile.Store(true)
		default:
			if owned {
				unix.Close(pfd)
			} else if err == unix.ENOENT {
				c.close() // the directory was removed since: resolved again next time
			}
			return nil, errNoFast
		}
	}
	for range 10000 {
		name := tempName()
		fd, err := unix.Openat(pfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, FilePerm)
		if err == unix.EEXIST || err == unix.EINTR {
			continue
		}
		if err != nil {
			if owned {
				unix.Close(pfd)
			} else if err == unix.ENOENT {
				c.close() // the directory was removed since: resolved again next time
			}
			return nil, errNoFast
		}
		t.fd, t.name = fd, name
		return t, nil
	}
	if owned {
		unix.Close(pfd)
	}
	return nil, errNoFast
}

// probeTmpfile tries, once per Dir, what every install will do with an
// unnamed file (in the directory pfd): create one, link it to a
// temporary name through /proc/self/fd, remove that name. Where any step
// fails (no O_TMPFILE, no /proc, a sandbox that refuses the link), or
// the file does not get the mode a named file gets (FilePerm less the
// umask, which some kernels did not apply to O_TMPFILE), files are
// written under temporary names instead: never a download that fails
// because of the way it is written.
func (d *Dir) probeTmpfile(pfd int) {
	ok := false
	defer func() {
		if !ok {
			d.noTmpfile.Store(true)
		}
	}()
	fd, err := retryEINTRFd(func() (int, error) {
		return unix.Openat(pfd, ".", unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC, FilePerm)
	})
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&0o777 != uint32(FilePerm&^processUmask()) {
		return
	}
	name := tempName()
	if retryEINTR(func() error {
		return unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), pfd, name, unix.AT_SYMLINK_FOLLOW)
	}) != nil {
		return
	}
	unix.Unlinkat(pfd, name, 0)
	ok = true
}

// processUmask reads the umask from /proc/self/status (Linux 4.7 and
// later; setting it to read it would race with other threads' creations).
// An unreadable one is taken as 0777: no mode matches it, so the probe
// falls back to named temporary files.
func processUmask() uint32 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0o777
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return uint32(m)
			}
		}
	}
	return 0o777
}

func (t *fastTemp) Write(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Write(t.fd, b[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, &os.PathError{Op: "write", Path: t.path, Err: err}
		}
		n += m
	}
	return n, nil
}

// finish sets the mtime on the descriptor, fsyncs unless noSync, and
// gives the file its name. A symbolic link at the final name is not
// replaced: errLinkAtName, for the caller to refuse it by name.
func (t *fastTemp) finish(mtime time.Time, noSync, noReplace bool) error {
	if !mtime.IsZero() {
		// futimens(2): utimensat on the descriptor itself (no path).
		ts := [2]unix.Timespec{unix.NsecToTimespec(mtime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
		if err := retryEINTR(func() error {
			_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(t.fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
			if e != 0 {
				return e
			}
			return nil
		}); err != nil {
			return &os.PathError{Op: "chtimes", Path: t.path, Err: err}
		}
	}
	if !noSync {
		if err := retryEINTR(func() error { return unix.Fsync(t.fd) }); err != nil {
			return &os.PathError{Op: "sync", Path: t.path, Err: err}
		}
	}
	if t.unnamed {
		return t.link(noReplace)
	}
	err := unix.Close(t.fd)
	t.fd = -1
	if err != nil && err != unix.EINTR {
		return &os.PathError{Op: "close", Path: t.path, Err: err}
	}
	return t.rename(noReplace)
}

// rename moves the temporary name to base. A new file (a baseline's)
// takes one renameat2 that refuses to replace anything; only when
// something is there already is it looked at: a regular file is
// replaced, a link is left to the caller, which refuses it by name.
func (t *fastTemp) rename(noReplace bool) error {
	err := retryEINTR(func() error { return unix.Renameat2(t.pfd, t.name, t.pfd, t.base, unix.RENAME_NOREPLACE) })
	if noReplace && err == unix.EEXIST {
		return errExistsAtName
	}
	if err == unix.EEXIST || err == unix.EINVAL || err == unix.ENOSYS {
		var st unix.Stat_t
		if unix.Fstatat(t.pfd, t.base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			if noReplace {
				return errExistsAtName // no RENAME_NOREPLACE on this file system
			}
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return errLinkAtName
			}
		}
		err = retryEINTR(func() error { return unix.Renameat(t.pfd, t.name, t.pfd, t.base) })
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: t.name, New: t.path, Err: err}
	}
	t.name = ""
	return nil
}

// link gives the unnamed file its name. linkat never replaces: a new
// file (every file of a baseline) is one linkat and done. When a file is
// at the name already, an update must still replace it atomically: the
// complete file is linked to a temporary name and renamed over it, one
// system call more than a named temporary file costs, paid only by
// updates. The file is linked through /proc/self/fd (AT_EMPTY_PATH would
// need CAP_DAC_READ_SEARCH), as open(2) describes for O_TMPFILE.
func (t *fastTemp) link(noReplace bool) error {
	proc := "/proc/self/fd/" + strconv.Itoa(t.fd)
	linkAt := func(pfd int, name string) error {
		return retryEINTR(func() error { return unix.Linkat(unix.AT_FDCWD, proc, pfd, name, unix.AT_SYMLINK_FOLLOW) })
	}
	err := linkAt(t.pfd, t.base)
	for try := 0; err == unix.ENOENT && try < createTries; try++ {
		// The directory was removed while the file was written (empty
		// meanwhile: RemoveEmptyParents for a deletion in the same
		// pass); or /proc is not mounted, which the portable path
		// cannot help either. The directory is made again and looked up
		// afresh, as the portable path does, and the file linked there.
		if _, serr := os.Stat(proc); serr != nil {
			t.d.noTmpfile.Store(true)
			return &os.LinkError{Op: "link", Old: proc, New: t.path, Err: serr}
		}
		if t.dir == "" {
			break // DEST itself is gone
		}
		if merr := t.d.root.MkdirAll(strings.TrimSuffix(t.dir, "/"), DirPerm); merr != nil {
			if errors.Is(merr, fs.ErrNotExist) {
				continue // a parent removed meanwhile: again
			}
			break
		}
		pfd, perr := t.d.openBeneath(t.dir, unix.O_PATH|unix.O_DIRECTORY)
		if perr == unix.ENOENT {
			continue
		}
		if perr != nil {
			break // a link swapped in: the caller refuses it by name
		}
		if t.ownPfd {
			unix.Close(t.pfd)
		}
		t.pfd, t.ownPfd = pfd, true
		err = linkAt(t.pfd, t.base)
	}
	if err == unix.EEXIST {
		if noReplace {
			return errExistsAtName
		}
		var st unix.Stat_t
		if unix.Fstatat(t.pfd, t.base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return errLinkAtName
		}
		for range 10000 {
			name := tempName()
			err = linkAt(t.pfd, name)
			if err == unix.EEXIST {
				continue
			}
			if err == nil {
				t.name = name // removed by release if the rename fails
				err = retryEINTR(func() error { return unix.Renameat(t.pfd, t.name, t.pfd, t.base) })
				if err == nil {
					t.name = ""
				}
			}
			break
		}
	}
	if err != nil {
		return &os.LinkError{Op: "link", Old: proc, New: t.path, Err: err}
	}
	cerr := unix.Close(t.fd)
	t.fd = -1
	if cerr != nil && cerr != unix.EINTR {
		// The name is there with every byte written (a close of a
		// local file system's file reports nothing more); said anyway.
		return &os.PathError{Op: "close", Path: t.path, Err: cerr}
	}
	return nil
}

// release removes the temporary name unless it was renamed, and closes
// the descriptors. An unnamed file that was never linked vanishes with
// its descriptor.
func (t *fastTemp) release() {
	if t.fd >= 0 {
		unix.Close(t.fd)
	}
	if t.name != "" {
		unix.Unlinkat(t.pfd, t.name, 0)
	}
	if t.ownPfd {
		unix.Close(t.pfd)
	}
}

func retryEINTRFd(f func() (int, error)) (int, error) {
	for {
		if fd, err := f(); err != unix.EINTR {
			return fd, err
		}
	}
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

// Both packages declare the kernel's struct stat; a size mismatch fails
// the build.
var (
	_ [unsafe.Sizeof(syscall.Stat_t{}) - unsafe.Sizeof(unix.Stat_t{})]byte
	_ [unsafe.Sizeof(unix.Stat_t{}) - unsafe.Sizeof(syscall.Stat_t{})]byte
)

// statInfo is an fs.FileInfo from a stat(2) result, as os makes them.
type statInfo struct {
	name string
	st   syscall.Stat_t
}

func (fi *statInfo) Name() string       { return fi.name }
func (fi *statInfo) Size() int64        { return fi.st.Size }
func (fi *statInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi *statInfo) Sys() any           { return &fi.st }
func (fi *statInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Unix()) }

// Mode converts st_mode as os.Lstat does.
func (fi *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(fi.st.Mode & 0o777)
	switch fi.st.Mode & syscall.S_IFMT {
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if fi.st.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if fi.st.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if fi.st.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
