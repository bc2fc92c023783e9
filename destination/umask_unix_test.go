//go:build unix

package destination_test

import (
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestUmaskOfMirror: installed files are 0666 and created directories
// 0777 less the umask, as cp, rsync and wget make them, so a mirror can be
// shared (022) or kept private (077). The state under .resourcesync stays
// private whatever the umask. The umask is process-wide: not parallel.
func TestUmaskOfMirror(t *testing.T) {
	base := staticSource(t, map[string]string{
		"/capabilitylist.xml": capList,
		"/resourcelist.xml":   resourceList("{base}a.txt", "{base}d/e/f.txt"),
		"/a.txt":              "a",
		"/d/e/f.txt":          "f",
	})
	for _, mask := range []int{0o022, 0o077} {
		dest := filepath.Join(t.TempDir(), "dest")
		old := syscall.Umask(mask)
		sr := one(t, mustSync(t, base+"capabilitylist.xml", syncOpts(t, dest)))
		syscall.Umask(old)
		if sr.Fetched != 2 {
			t.Fatalf("%+v", sr)
		}
		checked := 0
		filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(dest, p)
			if strings.HasPrefix(rel, ".resourcesync") {
				if fi, _ := d.Info(); d.Type().IsRegular() && fi.Mode().Perm()&0o077 != 0 {
					t.Errorf("umask %03o: state file %s is %v", mask, rel, fi.Mode().Perm())
				}
				return nil
			}
			want := fs.FileMode(0o666 &^ mask)
			if d.IsDir() {
				want = fs.FileMode(0o777 &^ mask)
			}
			if fi, _ := d.Info(); fi.Mode().Perm() != want {
				t.Errorf("umask %03o: %s is %v, want %v", mask, rel, fi.Mode().Perm(), want)
			}
			checked++
			return nil
		})
		if checked != 5 { // dest, a.txt, d, d/e, d/e/f.txt
			t.Fatalf("checked %d paths", checked)
		}
	}
}
