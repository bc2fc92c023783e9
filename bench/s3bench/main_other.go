//go:build !linux

// s3bench measures peak RSS through Linux's rusage; elsewhere it only
// says so.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "s3bench runs on Linux only")
	os.Exit(2)
}
