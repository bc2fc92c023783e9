package scan

import (
	"io"
	"io/fs"
	"syscall"
	"time"
)

// rawFile reads a file with plain system calls. It is opened with
// O_NOFOLLOW (a symbolic link swapped in for the file is not followed) and
// O_NONBLOCK (a FIFO swapped in does not block the open).
// rawFile reads a file with plain system calls: os.Open's poller
// registration attempt and bookkeeping cost more than the read itself for
// small files, and a scan opens every new file once.
type rawFile int

func openRaw(name string) (hashFile, error) {
	for {
		fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.ELOOP {
			return nil, &fs.PathError{Op: "open", Path: name, Err: errNotRegular}
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return rawFile(fd), nil
	}
}

func (f rawFile) Read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(int(f), b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: "", Err: err}
		}
		if n == 0 && len(b) > 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f rawFile) stat() (statKey, bool, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f), &st); err != nil {
		return statKey{}, false, &fs.PathError{Op: "fstat", Path: "", Err: err}
	}
	k := statKey{size: st.Size, mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec), ino: st.Ino}
	return k, st.Mode&syscall.S_IFMT == syscall.S_IFREG, nil
}

func (f rawFile) Close() error { return syscall.Close(int(f)) }

// lstat returns the stat fields of name and whether it is a regular file,
// without allocating.
func lstat(name string) (statKey, bool, error) {
	var st syscall.Stat_t
	for {
		err := syscall.Lstat(name, &st)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return statKey{}, false, &fs.PathError{Op: "lstat", Path: name, Err: err}
		}
		break
	}
	k := statKey{size: st.Size, mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec), ino: st.Ino}
	return k, st.Mode&syscall.S_IFMT == syscall.S_IFREG, nil
}
