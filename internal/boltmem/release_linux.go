package boltmem

import (
	"syscall"

	bbolt "go.etcd.io/bbolt"
)

// Release drops db's mapped pages from the process's resident set. It
// runs inside a read transaction, which holds bbolt's mmap lock, so the
// mapping cannot be replaced (remapped on growth) while it is advised.
func Release(db *bbolt.DB) error {
	return db.View(func(tx *bbolt.Tx) error {
		info := db.Info()
		// tx.Size is the high-water mark of the file's pages: never past
		// the end of the mapping, which is at least the file's size.
		size := uintptr(tx.Size())
		if info == nil || info.Data == 0 || size == 0 {
			return nil
		}
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, info.Data, size, syscall.MADV_DONTNEED); e != 0 {
			return e
		}
		return nil
	})
}
