//go:build !linux

package destination

import "errors"

// haveSyncfs: without syncfs (macOS, Windows, the BSDs) every file is
// fsynced before its rename (F_FSYNC on darwin, FlushFileBuffers on
// Windows), as with --fsync; there is no batch flush.
const haveSyncfs = false

func openSyncfs(string) (int, error) { return -1, nil }

func closeSyncfs(int) {}

func syncfs(int) error { return errors.ErrUnsupported }
