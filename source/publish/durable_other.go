//go:build !linux

package publish

// haveSyncfs: without syncfs every file is fsynced as it is written
// (writeAtomicLater is writeAtomic) and syncFS has nothing to do.
const haveSyncfs = false

func syncFS(string) error { return nil }
