package local

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// haveSyncfs: Linux flushes a whole file system with one call, so a
// commit with PutOptions.NoSync skips its fsync and Target.Sync makes a
// batch durable.
const haveSyncfs = true

func syncfs(d *os.File) error {
	sc, err := d.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := sc.Control(func(fd uintptr) { serr = unix.Syncfs(int(fd)) }); err != nil {
		return err
	}
	return serr
}

// renameNoReplace renames old to new in dir unless something is at new
// (an error wrapping fs.ErrExist): renameat2 RENAME_NOREPLACE, the
// kernel's own check, where the file system has it.
func renameNoReplace(dir *os.Root, old, new string) error {
	d, err := dir.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	sc, err := d.SyscallConn()
	if err != nil {
		return err
	}
	var rerr error
	if err := sc.Control(func(fd uintptr) {
		for {
			rerr = unix.Renameat2(int(fd), old, int(fd), new, unix.RENAME_NOREPLACE)
			if rerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if errors.Is(rerr, unix.EINVAL) || errors.Is(rerr, unix.ENOSYS) {
		return noReplaceByLink(dir, old, new) // a file system without it
	}
	if rerr != nil {
		return &os.LinkError{Op: "renameat2", Old: old, New: new, Err: rerr}
	}
	return nil
}
