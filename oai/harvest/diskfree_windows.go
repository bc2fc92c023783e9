package harvest

import "golang.org/x/sys/windows"

// freeBytes returns the bytes free to this user on the volume of dir; ok
// is false where that cannot be known.
func freeBytes(dir string) (free int64, ok bool, err error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, false, err
	}
	var avail, total, all uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &all); err != nil {
		return 0, false, err
	}
	return int64(avail), true, nil
}
