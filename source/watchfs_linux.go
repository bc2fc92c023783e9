package source

import "golang.org/x/sys/unix"

// networkFS names the network file system dir lies on ("nfs", "smb",
// ...), or "" for a local one (or when statfs fails: watched as local).
// inotify sees only the changes made through this kernel: on a network
// file system a file written by another machine raises no event.
func networkFS(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return ""
	}
	switch uint32(st.Type) {
	case unix.NFS_SUPER_MAGIC:
		return "nfs"
	case unix.SMB_SUPER_MAGIC, unix.SMB2_SUPER_MAGIC, unix.CIFS_SUPER_MAGIC:
		return "smb"
	case unix.V9FS_MAGIC:
		return "9p"
	case unix.AFS_SUPER_MAGIC, unix.AFS_FS_MAGIC:
		return "afs"
	case unix.CODA_SUPER_MAGIC:
		return "coda"
	case unix.FUSE_SUPER_MAGIC:
		return "fuse (sshfs, s3fs, a cloud drive, ...)"
	case 0x47504653: // GPFS
		return "gpfs"
	case 0x0bd00bd0: // Lustre
		return "lustre"
	case 0x00c36400: // CephFS
		return "ceph"
	}
	return ""
}
