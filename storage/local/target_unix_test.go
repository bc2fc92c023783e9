//go:build unix

package local_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/resourcesync-go/resourcesync/storage"
	"github.com/resourcesync-go/resourcesync/storage/local"
)

// TestTargetUmask: objects are 0666 and directories 0777 less the umask,
// as cp and rsync make them (not os.CreateTemp's 0600).
func TestTargetUmask(t *testing.T) {
	ctx := context.Background()
	for _, mask := range []int{0o022, 0o077, 0o002} {
		old := syscall.Umask(mask)
		root := t.TempDir()
		tg, err := local.OpenTarget(filepath.Join(root, "m"))
		if err != nil {
			syscall.Umask(old)
			t.Fatal(err)
		}
		w, err := tg.Create(ctx, "d/e/f", storage.PutOptions{Size: -1})
		if err == nil {
			w.Write([]byte("x"))
			_, err = w.Commit(ctx)
		}
		syscall.Umask(old)
		tg.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			p    string
			want os.FileMode
		}{{"m", 0o777}, {"m/d", 0o777}, {"m/d/e", 0o777}, {"m/d/e/f", 0o666}} {
			fi, err := os.Stat(filepath.Join(root, c.p))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fi.Mode().Perm(), c.want&^os.FileMode(mask); got != want {
				t.Errorf("umask %03o: %s is %03o, want %03o", mask, c.p, got, want)
			}
		}
	}
}
