//go:build !linux

package harvest

import (
	"errors"
	"os"
	"runtime"
	"syscall"
)

// Elsewhere each file is synced as it is written and each directory
// touched after the renames.

func syncFile(f *os.File) error { return f.Sync() }

func syncData(string) error { return nil }

func syncDirs(_ string, dirs map[string]bool) error {
	if runtime.GOOS == "windows" {
		return nil // directories cannot be synced there; NTFS journals renames
	}
	for d := range dirs {
		f, err := os.Open(d)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil && !errors.Is(err, syscall.EINVAL) {
			return err
		}
	}
	return nil
}
