//go:build !linux

package scan

import (
	"io"
	"os"
	"sync/atomic"
)

// dirRef is a directory being walked; here its jobs use absolute paths.
type dirRef struct {
	abs string
	f   *os.File
}

func openDir(abs string, _ bool, _ *atomic.Int32) (*dirRef, error) {
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	return &dirRef{abs: abs, f: f}, nil
}

func (d *dirRef) shared() bool { return false }
func (d *dirRef) acquire()     {}
func (d *dirRef) release()     { d.f.Close() }

func (d *dirRef) lstat(name string) (statKey, bool, error) { panic("scan: dirRef not shared") }
func (d *dirRef) openFile(name string) (hashFile, error)   { panic("scan: dirRef not shared") }

// list reads the directory and sorts it in path order.
func (d *dirRef) list([]byte) (*dirEntries, error) {
	de := &dirEntries{}
	var names []byte
	for {
		batch, err := d.f.ReadDir(listChunk)
		for _, e := range batch {
			n := e.Name()
			de.ents = append(de.ents, dent{off: uint32(len(names)), n: uint32(len(n)), typ: e.Type()})
			names = append(names, n...)
		}
		if err == io.EOF || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	de.sort(names)
	return de, nil
}

// listChunk is how many entries one directory read returns.
const listChunk = 1024
