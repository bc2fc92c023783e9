//go:build !linux

package boltmem

import bbolt "go.etcd.io/bbolt"

// Release does nothing here: see the package documentation.
func Release(db *bbolt.DB) error { return nil }

// ReleaseTx does nothing here: see the package documentation.
func ReleaseTx(tx *bbolt.Tx) error { return nil }
