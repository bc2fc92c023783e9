//go:build !unix

package publish

import (
	"io"
	"os"
)

// readFileInto reads the file at path into b (see dumpread_unix.go).
func readFileInto(path string, b []byte) (n int, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(b)-1) {
		return 0, false
	}
	n, err = io.ReadFull(f, b)
	return n, err == nil || err == io.ErrUnexpectedEOF || err == io.EOF
}
