package boltmem

import (
	"syscall"

	bbolt "go.etcd.io/bbolt"
)

// Release drops db's mapped pages from the process's resident set. It
// runs inside a read transaction, which holds bbolt's mmap lock, so the
// mapping cannot be replaced (remapped on growth) while it is advised.
func Release(db *bbolt.DB) error {
	return db.View(ReleaseTx)
}

// ReleaseTx is Release from inside a read transaction the caller holds
// (opening a second one on the same goroutine could deadlock against a
// writer waiting to remap the file). The transaction's pages are faulted
// in again as it reads on.
func ReleaseTx(tx *bbolt.Tx) error {
	if tx.Writable() {
		return nil // its size may run past the mapping until it commits
	}
	info := tx.DB().Info()
	// tx.Size is the high-water mark of the file's pages: never past the
	// end of the mapping, which is at least the file's size.
	size := uintptr(tx.Size())
	if info == nil || info.Data == 0 || size == 0 {
		return nil
	}
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, info.Data, size, syscall.MADV_DONTNEED); e != 0 {
		return e
	}
	return nil
}
