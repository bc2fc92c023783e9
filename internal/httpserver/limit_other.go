//go:build !unix

package httpserver

// fileLimit: no per-process descriptor limit to derive the cap from.
func fileLimit() (uint64, bool) { return 0, false }
