//go:build unix

package fetch

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// withUmask runs fn with the process umask set to mask. The umask is
// process-wide: tests using it must not run in parallel with others.
func withUmask(t *testing.T, mask int, fn func()) {
	t.Helper()
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	fn()
}

func TestInstallHonoursUmask(t *testing.T) {
	for _, tc := range []struct {
		mask          int
		file, dirMode os.FileMode
	}{{0o022, 0o644, 0o755}, {0o077, 0o600, 0o700}, {0o002, 0o664, 0o775}} {
		dest := t.TempDir()
		p := filepath.Join(dest, "new", "dir", "f")
		withUmask(t, tc.mask, func() {
			d, err := OpenDir(dest)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if _, err := Install(bytes.NewReader([]byte("x")), Request{Path: p, Dir: d}); err != nil {
				t.Fatal(err)
			}
		})
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != tc.file {
			t.Errorf("umask %03o: file mode %v, want %v", tc.mask, fi.Mode().Perm(), tc.file)
		}
		for _, dir := range []string{filepath.Dir(p), filepath.Dir(filepath.Dir(p))} {
			fi, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tc.dirMode {
				t.Errorf("umask %03o: directory %s mode %v, want %v", tc.mask, dir, fi.Mode().Perm(), tc.dirMode)
			}
		}
	}
}
