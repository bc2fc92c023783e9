package scan

import (
	"encoding/binary"
	"io/fs"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// dirRef is an open directory. Its workers stat and open the directory's
// files relative to its descriptor (fstatat, openat): the kernel then
// resolves one name per file instead of every component of its path,
// which is most of the cost of an unchanged rescan. The descriptor is
// closed when the walk and the last job holding a reference are done.
type dirRef struct {
	abs  string
	fd   int
	refs atomic.Int32
	open *atomic.Int32 // descriptors the scan holds open
}

// maxOpenDirs bounds the directory descriptors a scan holds for its
// workers; past it (many directories of a few files each, all in flight)
// the jobs use absolute paths.
const maxOpenDirs = 256

// openDir opens a directory found by the walk; it is not followed if it
// became a symbolic link meanwhile, unless follow (the root).
func openDir(abs string, follow bool, open *atomic.Int32) (*dirRef, error) {
	flags := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	for {
		fd, err := unix.Open(abs, flags, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: abs, Err: err}
		}
		d := &dirRef{abs: abs, fd: fd, open: open}
		d.refs.Store(1)
		open.Add(1)
		return d, nil
	}
}

// shared reports whether jobs may use the descriptor.
func (d *dirRef) shared() bool { return d.open.Load() <= maxOpenDirs }

func (d *dirRef) acquire() { d.refs.Add(1) }

func (d *dirRef) release() {
	if d.refs.Add(-1) == 0 {
		unix.Close(d.fd)
		d.open.Add(-1)
	}
}

// list reads the directory (getdents, parsed into one buffer of names,
// without an allocation per entry) and sorts it in path order.
func (d *dirRef) list(buf []byte) (*dirEntries, error) {
	de := &dirEntries{}
	var names []byte
	for {
		n, err := unix.Getdents(d.fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "getdents", Err: err}
		}
		if n <= 0 {
			break
		}
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			typ := b[18]
			name := b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			b = b[reclen:]
			if len(name) == 0 || (name[0] == '.' && (len(name) == 1 || (len(name) == 2 && name[1] == '.'))) {
				continue
			}
			var t fs.FileMode
			switch typ {
			case unix.DT_DIR:
				t = fs.ModeDir
			case unix.DT_REG:
			case unix.DT_LNK:
				t = fs.ModeSymlink
			case unix.DT_UNKNOWN: // some filesystems: ask
				var st unix.Stat_t
				err := unix.Fstatat(d.fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW)
				if err == unix.ENOENT {
					continue // gone meanwhile
				}
				if err != nil { // as os.ReadDir: the listing fails, its files are protected
					return nil, &fs.PathError{Op: "lstat", Path: string(name), Err: err}
				}
				t = modeType(st.Mode)
			default:
				t = fs.ModeIrregular
			}
			de.ents = append(de.ents, dent{off: uint32(len(names)), n: uint32(len(name)), typ: t})
			names = append(names, name...)
		}
	}
	de.sort(names)
	return de, nil
}

func modeType(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFREG:
		return 0
	case unix.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}

// lstat is lstat of the directory's entry name.
func (d *dirRef) lstat(name string) (statKey, bool, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return statKey{}, false, &fs.PathError{Op: "lstat", Path: name, Err: err}
		}
		break
	}
	k := statKey{size: st.Size, mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec), ino: st.Ino}
	return k, st.Mode&unix.S_IFMT == unix.S_IFREG, nil
}

// openFile opens the directory's entry name to hash it, as openRaw does.
func (d *dirRef) openFile(name string) (hashFile, error) {
	for {
		fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err == unix.EINTR {
			continue
		}
		if err == unix.ELOOP {
			return nil, &fs.PathError{Op: "open", Path: name, Err: errNotRegular}
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return rawFile(fd), nil
	}
}
