package publish

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// haveSyncfs: Linux flushes a whole file system with one call, so the
// many small files of a run of the feeds are written without an fsync
// each and made durable together (writeAtomicLater, syncFS), as the
// Destination installs files (destination/durable_linux.go).
const haveSyncfs = true

// syncFS flushes the file system that holds dir.
func syncFS(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return fmt.Errorf("publish: syncfs %s: %w", dir, err)
	}
	return nil
}
