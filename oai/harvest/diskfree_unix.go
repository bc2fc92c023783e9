//go:build linux || darwin || freebsd

package harvest

import "golang.org/x/sys/unix"

// freeBytes returns the bytes free to this user on the file system of
// dir; ok is false where that cannot be known.
func freeBytes(dir string) (free int64, ok bool, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false, err
	}
	return int64(st.Bavail) * int64(st.Bsize), true, nil
}
