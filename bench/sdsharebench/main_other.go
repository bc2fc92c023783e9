//go:build !linux

// sdsharebench measures peak RSS from /proc (VmHWM) of child processes and
// reads the machine's description there; elsewhere it only says so.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "sdsharebench runs on Linux only")
	os.Exit(2)
}
