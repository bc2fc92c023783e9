//go:build unix

package httpserver

import "syscall"

// fileLimit is the process's soft limit on open descriptors (Go raises it
// to the hard limit at start).
func fileLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return uint64(rl.Cur), true
}
