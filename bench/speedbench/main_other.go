//go:build !linux

// Command speedbench measures issue 23's targets; it runs on Linux only
// (GNU time, /proc, the file systems it measures).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "speedbench: Linux only")
	os.Exit(2)
}
