//go:build !unix

package server

import "io/fs"

// inode returns 0: no inode numbers in FileInfo here.
func inode(fs.FileInfo) uint64 { return 0 }
