package destination

import (
	"os"
	"path/filepath"
	"strconv"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// createState writes a new, empty state at p, its buckets and layout
// made, without the fdatasync bbolt's own creation of a file does (the
// first durable point of a fresh state is its first commit that matters:
// state.commit). The database is built by bbolt itself in memory (a
// memfd, where fdatasync costs nothing), its bytes written to an unnamed
// file in p's directory (O_TMPFILE) and that file linked to p, which
// fails if p exists: p appears whole or not at all, whatever kills the
// process when. Best effort: where any step fails (no O_TMPFILE, no
// /proc, a file system without links), p is left to bbolt's Open.
func createState(p string) {
	img, err := emptyStateImage()
	if err != nil {
		return
	}
	fd, err := unix.Open(filepath.Dir(p), unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if unix.Fchmod(fd, 0o600) != nil { // the umask may have taken more
		return
	}
	for off := 0; off < len(img); {
		n, err := unix.Pwrite(fd, img[off:], int64(off))
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		off += n
	}
	// EEXIST: another run created it meanwhile; bbolt's lock decides.
	unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.AT_FDCWD, p, unix.AT_SYMLINK_FOLLOW)
}

// emptyStateImage returns the bytes of a state with its buckets and
// layout and nothing else.
func emptyStateImage() ([]byte, error) {
	mfd, err := unix.MemfdCreate("resourcesync-state", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(mfd), "memfd:resourcesync-state")
	db, err := bolt.Open(f.Name(), 0o600, &bolt.Options{NoSync: true, NoGrowSync: true,
		OpenFile: func(string, int, os.FileMode) (*os.File, error) { return f, nil }})
	if err != nil {
		f.Close()
		return nil, err
	}
	defer db.Close() // closes f
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range stateBuckets {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put([]byte("layout"), []byte(layout))
	}); err != nil {
		return nil, err
	}
	var img []byte
	err = db.View(func(tx *bolt.Tx) error {
		img = make([]byte, tx.Size())
		_, err := f.ReadAt(img, 0)
		return err
	})
	return img, err
}
