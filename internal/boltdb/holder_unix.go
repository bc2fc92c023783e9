//go:build unix && !linux

package boltdb

import (
	"errors"
	"syscall"
)

// lockHolders: the lock table is not read here (no /proc/locks).
func lockHolders(string) []int { return nil }

// cmdline: not read here.
func cmdline(int) ([]string, bool) { return nil, false }

func alive(pid int) tristate {
	err := syscall.Kill(pid, 0)
	if err == nil || errors.Is(err, syscall.EPERM) {
		return yes
	}
	return no
}
