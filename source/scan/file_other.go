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
