//go:build unix

package nofollow

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Open opens dir/rel for reading without following any symbolic
// link below dir: each directory is opened relative to its parent with
// O_NOFOLLOW|O_DIRECTORY and the file with O_NOFOLLOW, so a component
// swapped for a link after the scan is refused (ErrLink) instead of being
// followed out of dir. O_NONBLOCK keeps a FIFO swapped in from blocking
// the open; the caller refuses anything but a regular file.
func Open(dir, rel string) (*os.File, error) {
	parts, err := SplitRel(rel)
	if err != nil {
		return nil, err
	}
	fd, err := retry(func() (int, error) {
		return unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	for i, p := range parts {
		flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i < len(parts)-1 {
			flags |= unix.O_DIRECTORY
		} else {
			flags |= unix.O_NONBLOCK
		}
		next, err := retry(func() (int, error) { return unix.Openat(fd, p, flags, 0) })
		unix.Close(fd)
		if err != nil {
			name := filepath.Join(dir, filepath.Join(parts[:i+1]...))
			if err == unix.ELOOP || err == unix.ENOTDIR || err == unix.EMLINK {
				// ENOTDIR: a directory component is now a link (O_DIRECTORY
				// with O_NOFOLLOW) or a file. Tell a link apart for the log.
				var st unix.Stat_t
				if unix.Lstat(name, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
					return nil, fmt.Errorf("%w: %s", ErrLink, name)
				}
				if err == unix.ELOOP || err == unix.EMLINK {
					return nil, fmt.Errorf("%w: %s", ErrLink, name)
				}
			}
			return nil, &fs.PathError{Op: "openat", Path: name, Err: err}
		}
		fd = next
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, filepath.FromSlash(rel))), nil
}

func retry(open func() (int, error)) (int, error) {
	for {
		fd, err := open()
		if err != unix.EINTR {
			return fd, err
		}
	}
}
