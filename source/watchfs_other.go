//go:build !linux && !darwin

package source

// networkFS: not known on this platform; a directory is watched as
// local (the --rescan-interval scans remain the safety net).
func networkFS(string) string { return "" }
