//go:build !linux

package source

import "os"

// newWatchBackend: fsnotify (kqueue, ReadDirectoryChangesW, ...), which
// reports no close of a written file: Run waits for events to be quiet.
func newWatchBackend() (watchBackend, error) { return newFsnotifyBackend() }

// linkCount: only Linux's watch asks (see watch_inotify_linux.go).
func linkCount(os.FileInfo) uint64 { return 1 }
