//go:build !unix

package nofollow

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// Open opens dir/rel for reading without going through a symbolic
// link or another reparse point below dir. os.Root refuses any path that
// would leave dir, whatever is swapped in meanwhile; every component is
// also checked not to be a link (ErrLink) and the opened file must be the
// one checked (os.SameFile), so a link inside dir is not followed either.
func Open(dir, rel string) (*os.File, error) {
	parts, err := SplitRel(rel)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var last fs.FileInfo
	for i := range parts {
		p := path.Join(parts[:i+1]...)
		fi, err := root.Lstat(filepath.FromSlash(p))
		if err != nil {
			return nil, err
		}
		if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
			return nil, fmt.Errorf("%w: %s", ErrLink, filepath.Join(dir, filepath.FromSlash(p)))
		}
		last = fi
	}
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || !os.SameFile(fi, last) {
		f.Close()
		return nil, fmt.Errorf("%w: %s changed while being opened", ErrLink, filepath.Join(dir, filepath.FromSlash(rel)))
	}
	return f, nil
}
