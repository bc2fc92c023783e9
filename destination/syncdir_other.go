//go:build !unix

package destination

// syncDir is a no-op where directories cannot be fsynced (Windows: a
// rename is made durable with the file system's own journal).
func syncDir(string) error { return nil }
