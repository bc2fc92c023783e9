package destination

import "golang.org/x/sys/unix"

// haveSyncfs: Linux can flush a whole file system with one call, so files
// are installed without fsync and made durable in batches.
const haveSyncfs = true

// openSyncfs opens the directory whose file system syncfs flushes.
func openSyncfs(dir string) (int, error) {
	return unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

func closeSyncfs(fd int) { unix.Close(fd) }

func syncfs(fd int) error { return unix.Syncfs(fd) }
