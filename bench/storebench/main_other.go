//go:build !linux

// storebench reads children's rusage and /proc VmHWM; elsewhere it only
// says so.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "storebench runs on Linux only")
	os.Exit(2)
}
