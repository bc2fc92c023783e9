//go:build !linux

// oaibench reads the peak RSS of its children with GNU time; elsewhere it
// only says so.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "oaibench runs on Linux only")
	os.Exit(2)
}
