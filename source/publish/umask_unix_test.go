//go:build unix

package publish_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// TestPublishHonoursUmask: the published tree is readable by a web server
// running as another user under the usual umask 022, and private under
// 077: files 0666 and directories 0777 less the umask, as cp makes them.
// The umask is process-wide: this test does not run in parallel.
func TestPublishHonoursUmask(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	for _, mask := range []int{0o022, 0o077} {
		out, dir := filepath.Join(t.TempDir(), "out"), t.TempDir()
		st := openStore(t, "")
		apply(t, st, dir, rs.Created, "a/b.txt", "hello", t0)
		apply(t, st, dir, rs.Created, "c.txt", "world", t0)
		base := "http://127.0.0.1:1/"
		cfg := publish.Config{BaseURL: base, Out: out, Dumps: true, Archives: true, Logger: quiet,
			Now:  func() time.Time { return t0.Add(time.Minute) },
			Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "res/"}}}
		old := syscall.Umask(mask)
		_, err := publish.Publish(context.Background(), cfg)
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		wantFile, wantDir := fs.FileMode(0o666&^mask), fs.FileMode(0o777&^mask)
		files := 0
		filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			fi, _ := d.Info()
			want := wantFile
			if d.IsDir() {
				want = wantDir
			} else {
				files++
			}
			if fi.Mode().Perm() != want {
				t.Errorf("umask %03o: %s is %v, want %v", mask, p, fi.Mode().Perm(), want)
			}
			return nil
		})
		if files < 5 {
			t.Fatalf("only %d files published", files)
		}
	}
}
