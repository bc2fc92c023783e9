//go:build !linux

// aggbench measures Linux mechanisms (GNU time of children, /proc VmHWM
// and CPU times of the Sources); elsewhere it only says so.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "aggbench runs on Linux only")
	os.Exit(2)
}
