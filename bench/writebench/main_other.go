//go:build !linux

// Command writebench measures a mirror's write path; it runs on Linux
// only (perf, strace, /proc).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "writebench: Linux only")
	os.Exit(2)
}
