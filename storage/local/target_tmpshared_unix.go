//go:build unix

package local

// TEMPORARY (branch i31-target): a copy of the content helper's
// content_unix.go inode; delete at the merge.

import (
	"io/fs"
	"syscall"
)

func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
