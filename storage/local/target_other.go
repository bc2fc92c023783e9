//go:build !linux

package local

import (
	"errors"
	"os"
)

// haveSyncfs: without syncfs (macOS, Windows, the BSDs) every commit is
// fsynced (F_FSYNC on darwin, FlushFileBuffers on Windows), NoSync or not.
const haveSyncfs = false

func syncfs(*os.File) error { return errors.ErrUnsupported }

// renameNoReplace renames old to new in dir unless something is at new.
func renameNoReplace(dir *os.Root, old, new string) error {
	return noReplaceByLink(dir, old, new)
}
