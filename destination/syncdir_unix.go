//go:build unix

package destination

import "os"

// syncDir fsyncs a directory, making the names in it durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
