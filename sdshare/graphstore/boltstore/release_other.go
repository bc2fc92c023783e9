//go:build !linux

package boltstore

// releaseMapped is a no-op outside Linux (see release_linux.go).
func (s *Store) releaseMapped() {}
