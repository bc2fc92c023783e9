//go:build !unix

package local

import "io/fs"

// inode is 0 where the platform has none in fs.FileInfo: the Version
// is then size and mtime.
func inode(fs.FileInfo) uint64 { return 0 }

func isNotDir(error) bool { return false }
