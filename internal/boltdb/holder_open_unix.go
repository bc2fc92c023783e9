//go:build unix

package boltdb

import "syscall"

// holderOpenFlags: a record that is a FIFO is opened without waiting for
// a writer (readHolder then refuses it as not a regular file).
const holderOpenFlags = syscall.O_NONBLOCK
