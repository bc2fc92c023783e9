//go:build unix

package publish

import (
	"golang.org/x/sys/unix"
)

// readFileInto reads the file at path into b (len(b) is its expected size
// plus one, to see a file that grew) with open, fstat, read and close only:
// os.Open would also try to register the file with the network poller, a
// system call per file that a dump of many small files feels. It returns
// the bytes read; ok is false when the file is not a regular file of
// len(b)-1 bytes.
func readFileInto(path string, b []byte) (n int, ok bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	}
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != int64(len(b)-1) {
		return 0, false
	}
	for n < len(b) {
		m, err := unix.Read(fd, b[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, false
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, true
}
