//go:build !unix

package local

import "os"

// syncDir: a directory cannot be fsynced (Windows makes a rename durable
// with the file system's journal).
func syncDir(*os.Root) error { return nil }
