//go:build !unix

package boltdb

// holderOpenFlags: no FIFO in a directory here.
const holderOpenFlags = 0
