//go:build !linux

// syncbench measures Linux mechanisms (rusage of children, syncfs, /proc,
// statfs types); elsewhere it only says so.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "syncbench runs on Linux only")
	os.Exit(2)
}
