//go:build !unix

package scan

import "io/fs"

func inode(fs.FileInfo) uint64 { return 0 }
