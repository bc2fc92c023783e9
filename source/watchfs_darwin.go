package source

import "golang.org/x/sys/unix"

// networkFS names the network file system dir lies on ("nfs", "smbfs",
// ...), or "" for a local one (or when statfs fails). kqueue sees only
// the changes made through this kernel.
func networkFS(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return ""
	}
	name := unix.ByteSliceToString(st.Fstypename[:])
	switch name {
	case "nfs", "smbfs", "afpfs", "webdav", "cifs", "macfuse", "osxfuse", "fusefs":
		return name
	}
	return ""
}
