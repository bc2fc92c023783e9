//go:build !unix

package boltdb

// lockHolders: the lock table is not read here.
func lockHolders(string) []int { return nil }

// cmdline: not read here.
func cmdline(int) ([]string, bool) { return nil, false }

// alive: not checked here.
func alive(int) tristate { return unknown }
