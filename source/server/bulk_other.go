//go:build !linux

package server

import (
	"io"

	"github.com/resourcesync-go/resourcesync/source/store"
)

// readScanned reads the small file dir/rel into buf if it is the very
// file the inventory record res describes (serveResource's checks).
func readScanned(dir, rel string, res *store.Resource, buf []byte) ([]byte, bool) {
	f, err := openInside(dir, rel)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || !sameAsScanned(fi, res) || fi.Size() > int64(len(buf)) {
		return nil, false
	}
	buf = buf[:fi.Size()]
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, false
	}
	return buf, true
}
