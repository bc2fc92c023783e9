// Package casefoldfs mounts a real case-insensitive file system for a
// test: a FAT image (mkfs.vfat) through fusefat, the FUSE driver Debian
// ships, since the kernels tests run on may have neither the vfat module
// nor ext4 with casefold. Names that differ only in case name one file
// there, as on macOS (APFS, HFS+) and Windows (NTFS) by default.
package casefoldfs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Mount mounts a fresh 64 MiB FAT file system and returns its root; it is
// unmounted when the test ends. See MountAt.
func Mount(t testing.TB) string {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	MountAt(t, mnt)
	return mnt
}

// MountAt mounts a fresh 64 MiB FAT file system on the empty directory
// mnt; it is unmounted when the test ends. fusefat cannot grow a file by
// truncating it, which bbolt does: a state database must live elsewhere
// (a test mounts it on a directory below DEST, say). The test is skipped, saying why, where
// that cannot be done: not Linux, not root (mounting FUSE file systems
// with allow_other and a loop-free image needs it here), no /dev/fuse, or
// the tools missing (apt-get install dosfstools fusefat).
func MountAt(t testing.TB, mnt string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("casefoldfs: FUSE FAT mounts are set up on Linux only")
	}
	if os.Geteuid() != 0 {
		t.Skip("casefoldfs: mounting a FAT image needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("casefoldfs: no FUSE device: %v", err)
	}
	mkfs, err1 := exec.LookPath("mkfs.vfat")
	fusefat, err2 := exec.LookPath("fusefat")
	fusermount, err3 := exec.LookPath("fusermount")
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Skipf("casefoldfs: %v (apt-get install dosfstools fusefat)", err)
	}
	img := filepath.Join(t.TempDir(), "fat.img")
	f, err := os.Create(img)
	if err == nil {
		err = errors.Join(f.Truncate(64<<20), f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.vfat: %v: %s", err, out)
	}
	// fusefat goes to the background once mounted; rw+ is its
	// read-write mode. It numbers each spelling of a name as its own
	// inode, so the kernel's cache of lookups would keep FOO.txt after
	// Foo.txt is removed: no caching, as a file system that folds case
	// in the kernel behaves.
	if out, err := exec.Command(fusefat, "-o", "rw+,entry_timeout=0,negative_timeout=0,attr_timeout=0", img, mnt).CombinedOutput(); err != nil {
		t.Skipf("casefoldfs: fusefat cannot mount here: %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		// A file a test left open makes the mount busy for a moment.
		for i := 0; ; i++ {
			out, err := exec.Command(fusermount, "-u", mnt).CombinedOutput()
			if err == nil {
				return
			}
			if i == 50 {
				t.Errorf("fusermount -u %s: %v: %s", mnt, err, out)
				exec.Command(fusermount, "-u", "-z", mnt).Run()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	// It folds case, or it is not the file system the test needs.
	if err := os.WriteFile(filepath.Join(mnt, "Probe"), nil, 0o644); err != nil {
		t.Fatalf("casefoldfs: %v", err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "pROBE")); err != nil {
		t.Fatalf("casefoldfs: the FAT mount does not fold case: %v", err)
	}
	if err := os.Remove(filepath.Join(mnt, "Probe")); err != nil {
		t.Fatal(err)
	}
}
