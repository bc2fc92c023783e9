package destination_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
)

// TestFence: a run whose Options.Fence refuses (after its first write,
// the run's mark) deletes nothing and records nothing more: the files
// the Source deleted stay, the state keeps the previous checkpoint (the
// next run, without the fence, finds the mark and catches up as after a
// crash), and the run ends with the fence's error.
func TestFence(t *testing.T) {
	srcDir, dest := t.TempDir(), t.TempDir()
	for _, f := range []string{"a.txt", "b.txt", "c.txt", "d/e.txt"} {
		writeFile(t, srcDir, f, []byte("v1 "+f))
	}
	ts := startSource(t, srcDir, nil, nil)
	mustSync(t, ts.base, syncOpts(t, dest))
	sameTree(t, srcDir, dest)

	os.Remove(filepath.Join(srcDir, "a.txt"))
	os.Remove(filepath.Join(srcDir, "d", "e.txt"))
	writeFile(t, srcDir, "b.txt", []byte("v2 b"))
	writeFile(t, srcDir, "f.txt", []byte("v1 f"))
	ts.update(t)

	var calls atomic.Int32
	refused := errors.New("lease over (test)")
	opt := syncOpts(t, dest)
	opt.Fence = func(context.Context) error {
		if calls.Add(1) > 1 {
			return refused
		}
		return nil
	}
	_, err := destination.Sync(context.Background(), ts.base, opt)
	t.Logf("fenced run: %v", err)
	if err == nil || !strings.Contains(err.Error(), "fenced") {
		t.Fatalf("fenced run: error %v", err)
	}
	if calls.Load() < 2 {
		t.Errorf("the fence was asked %d times, want the mark and the first write after it", calls.Load())
	}
	for _, f := range []string{"a.txt", "d/e.txt"} {
		if _, err := os.Stat(filepath.Join(dest, filepath.FromSlash(f))); err != nil {
			t.Errorf("%s deleted by a fenced run: %v", f, err)
		}
	}
	// The next run (not fenced) sees what the fenced one left as a
	// crash's and makes the mirror equal the Source.
	rep := mustSync(t, ts.base, syncOpts(t, dest))
	sameTree(t, srcDir, dest)
	if sr := one(t, rep); sr.Deleted != 2 {
		t.Errorf("the run after the fenced one deleted %d, want 2: %+v", sr.Deleted, sr)
	}
}
