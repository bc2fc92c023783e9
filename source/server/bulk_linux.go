package server

import (
	"golang.org/x/sys/unix"

	"github.com/resourcesync-go/resourcesync/source/store"
)

// readScanned reads the small file dir/rel into buf if it is the very
// file the inventory record res describes (serveSmall's checks: no link
// on the way, a regular file, same size, mtime and inode).
func readScanned(dir, rel string, res *store.Resource, buf []byte) ([]byte, bool) {
	fd := openNoLinks(dir, rel)
	if fd < 0 {
		return nil, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || !sameStat(&st, res) || st.Size > int64(len(buf)) {
		return nil, false
	}
	buf = buf[:st.Size]
	for n := 0; n < len(buf); {
		m, err := unix.Pread(fd, buf[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil || m == 0 {
			return nil, false
		}
		n += m
	}
	return buf, true
}
