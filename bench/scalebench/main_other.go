//go:build !linux

// scalebench measures Linux mechanisms (rusage of children, /proc VmHWM,
// syncfs, statfs types); elsewhere it only says so.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "scalebench runs on Linux only")
	os.Exit(2)
}
