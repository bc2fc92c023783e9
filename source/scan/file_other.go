//go:build !linux

package scan

import "os"

func openRaw(name string) (hashFile, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func lstat(name string) (statKey, bool, error) {
	fi, err := os.Lstat(name)
	if err != nil {
		return statKey{}, false, err
	}
	return statOf(fi), fi.Mode().IsRegular(), nil
}
