package scan

import (
	"io"
	"io/fs"
	"syscall"
	"time"
)

// rawFile reads a file with plain system calls: os.Open's poller
// registration attempt and bookkeeping cost more than the read itself for
// small files, and a scan opens every new file once.
type rawFile int

func openRaw(name string) (hashFile, error) {
	for {
		fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
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

func (f rawFile) statKey() (statKey, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f), &st); err != nil {
		return statKey{}, &fs.PathError{Op: "fstat", Path: "", Err: err}
	}
	return statKey{size: st.Size, mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec), ino: st.Ino}, nil
}

func (f rawFile) Close() error { return syscall.Close(int(f)) }
