package destination_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/storage"
)

// uploadTarget is a mem Target that also has unfinished uploads, as an S3
// bucket does: it records what CleanupUploads was asked.
type uploadTarget struct {
	storage.Target
	mu      sync.Mutex
	calls   int
	befores []time.Time
}

func (u *uploadTarget) CleanupUploads(_ context.Context, before time.Time) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.calls++
	u.befores = append(u.befores, before)
	return 1, nil
}

// TestSyncAbortsStaleUploads: every run (not a dry run) into a Target
// with unfinished uploads aborts those older than StaleUploadAge (what a
// killed run left: invisible, but billed), never younger ones.
func TestSyncAbortsStaleUploads(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("a\n"))
	ts := startSource(t, dir, nil, nil)
	ut := &uploadTarget{Target: newMem(t).Target("")}
	now := time.Now()
	opt := targetOpts(t, t.TempDir(), ut)
	opt.Now = func() time.Time { return now }
	mustSync(t, ts.base, opt)
	opt.DryRun = true
	mustSync(t, ts.base, opt)
	if ut.calls != 1 {
		t.Fatalf("CleanupUploads called %d times for a run and a dry run, want 1", ut.calls)
	}
	if want := now.Add(-destination.StaleUploadAge); !ut.befores[0].Equal(want) {
		t.Errorf("aborted uploads started before %v, want before %v", ut.befores[0], want)
	}
}
