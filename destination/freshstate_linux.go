package destination

import (
	"os"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// createState writes a new, empty state at p, its buckets and layout
// made, without the fdatasync bbolt's own creation of a file does (the
// first durable point of a fresh state is its first commit that matters:
// state.commit). The database is built by bbolt itself in memory (a
// memfd, where fdatasync costs nothing) and its bytes written to p, which
// must not exist. Best effort: on any failure p is left as bbolt's Open
// handles it (absent, or empty: then bbolt creates it).
func createState(p string) {
	img, err := emptyStateImage()
	if err != nil {
		return
	}
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return // there already, or cannot be: Open says which
	}
	defer unix.Close(fd)
	// bbolt's lock: a run that opened the empty file meanwhile holds it
	// (and creates the database itself), or has made one already.
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return
	}
	defer unix.Flock(fd, unix.LOCK_UN)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Size != 0 {
		return
	}
	if n, err := unix.Pwrite(fd, img, 0); err != nil || n != len(img) {
		unix.Ftruncate(fd, 0) // empty: bbolt creates it
	}
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
