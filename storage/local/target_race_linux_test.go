package local_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/resourcesync-go/resourcesync/storage"
	"github.com/resourcesync-go/resourcesync/storage/local"
)

// TestTargetSymlinkSwapRace: another process swaps the key's directory
// for a symbolic link (to another directory of the mirror) and back, as
// fast as it can, while objects are written under it. No object may land
// through the link: in the other directory. A write may fail (refused,
// or too many links); it must not go elsewhere.
func TestTargetSymlinkSwapRace(t *testing.T) {
	root := filepath.Join(t.TempDir(), "m")
	tg, err := local.OpenTarget(root)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	other := filepath.Join(root, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	d, link := filepath.Join(root, "d"), filepath.Join(root, "d.link")
	os.MkdirAll(d, 0o755)
	os.Symlink("other", link)
	var swaps atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			// d: directory <-> link, atomically (d is never missing).
			if unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE) == nil {
				swaps.Add(1)
			}
		}
	}()
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Second)
	var ok, failed int
	for i := 0; time.Now().Before(deadline); i++ {
		w, err := tg.Create(ctx, fmt.Sprintf("d/f%d", i), storage.PutOptions{Size: 1, NoReplace: true})
		if err == nil {
			w.Write([]byte("x"))
			_, err = w.Commit(ctx)
		}
		if err != nil {
			failed++
			continue
		}
		ok++
	}
	stop.Store(true)
	wg.Wait()
	ents, _ := os.ReadDir(other)
	t.Logf("%d written, %d failed, %d swaps; %d in the link's target", ok, failed, swaps.Load(), len(ents))
	if len(ents) > 0 {
		t.Errorf("%d objects written through the symbolic link into %s (e.g. %s)", len(ents), other, ents[0].Name())
	}
}
