package server

import (
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/resourcesync-go/resourcesync/source/store"
)

// smallFile is the largest resource serveSmall answers: read whole into a
// buffer, it goes out with its headers in one write.
const smallFile = 64 << 10

var smallBufs = sync.Pool{New: func() any { b := make([]byte, smallFile); return &b }}

// serveSmall answers a plain GET (no range, no condition) for a small
// resource with a handful of system calls: openat2(2) resolves the path
// refusing every symbolic link (RESOLVE_NO_SYMLINKS) in one call where
// openInside opens each component, and the bytes are read with one pread
// instead of http.ServeContent's seeks, sniffing read and sendfile. It
// checks what serveResource checks (a regular file, the one scanned) and
// returns false, having written nothing, for anything else: the general
// path then answers (and says why).
func serveSmall(w http.ResponseWriter, r *http.Request, dir, rel string, res *store.Resource, set *Set) bool {
	if r.Method != http.MethodGet || res.Size > smallFile {
		return false
	}
	for _, k := range [...]string{"Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range"} {
		if _, ok := r.Header[k]; ok {
			return false
		}
	}
	if !descends(rel) {
		return false
	}
	fd := openNoLinks(dir, rel)
	if fd < 0 {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || !sameStat(&st, res) {
		return false
	}
	bp := smallBufs.Get().(*[]byte)
	defer smallBufs.Put(bp)
	buf := (*bp)[:st.Size]
	for n := 0; n < len(buf); {
		m, err := unix.Pread(fd, buf[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil || m == 0 {
			return false // shrank since the fstat: the general path answers 503
		}
		n += m
	}
	// The header values share one backing array (a Set per header costs
	// an allocation each, a third of the handler's); the keys are in
	// canonical form already.
	hd := w.Header()
	v := make([]string, 6)
	put := func(i int, k, val string) { v[i] = val; hd[k] = v[i : i+1 : i+1] }
	ct := res.Type
	if ct == "" {
		ct = "application/octet-stream"
	}
	put(0, "Content-Type", ct)
	if set.CapabilityList != "" {
		put(1, "Link", "<"+set.CapabilityList+`>; rel="resourcesync"`)
	}
	put(2, "Etag", etag(res))
	// As http.ServeContent sets them.
	if lm := res.LastMod; !lm.IsZero() && !lm.Equal(time.Unix(0, 0)) {
		put(3, "Last-Modified", lm.UTC().Format(http.TimeFormat))
	}
	put(4, "Accept-Ranges", "bytes")
	put(5, "Content-Length", strconv.Itoa(len(buf)))
	w.WriteHeader(http.StatusOK)
	w.Write(buf)
	return true
}

// openNoLinks opens dir/rel for reading with no symbolic link on the way
// below dir, or returns -1. A link in dir's own path (allowed: it is the
// configuration's) makes the first try fail; the second resolves rel from
// a handle on dir.
func openNoLinks(dir, rel string) int {
	const flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	how := unix.OpenHow{Flags: flags, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := retry(func() (int, error) { return unix.Openat2(unix.AT_FDCWD, filepath.Join(dir, rel), &how) })
	if err == nil {
		return fd
	}
	if err != unix.ELOOP {
		return -1 // not there (the general path says 404), no openat2 here, …
	}
	dfd, err := retry(func() (int, error) {
		return unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return -1
	}
	defer unix.Close(dfd)
	how.Resolve |= unix.RESOLVE_BENEATH
	if fd, err = retry(func() (int, error) { return unix.Openat2(dfd, rel, &how) }); err != nil {
		return -1 // a link below dir: the general path refuses it and logs it
	}
	return fd
}

// sameStat is sameAsScanned for a stat(2) result.
func sameStat(st *unix.Stat_t, res *store.Resource) bool {
	mt := time.Unix(st.Mtim.Unix())
	if st.Size != res.Size {
		return false
	}
	if !mt.Equal(res.ModTime) && !(res.ModTime.IsZero() && mt.Equal(res.LastMod)) {
		return false
	}
	return res.Inode == 0 || uint64(st.Ino) == res.Inode
}
