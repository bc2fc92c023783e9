//go:build unix

package local

import "os"

// syncDir fsyncs a directory, making the names in it durable.
func syncDir(dir *os.Root) error {
	f, err := dir.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
