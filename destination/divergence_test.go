package destination_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/source/notify"
)

// notifiedSource starts a Source whose change notifications are captured
// (the channel starts before the first Resource List, as serve does it).
func notifiedSource(t *testing.T, dir string) (*testSource, *captured, func()) {
	t.Helper()
	pub := &captured{}
	ctx := context.Background()
	var n *notify.Notifier
	beforeFirstUpdate = func(ts *testSource) {
		n = &notify.Notifier{Pub: pub, Hub: ts.base + "hub", Topic: func(string) string { return ts.base + "topic" },
			CapabilityList: ts.src.CapabilityListURL, ResourceBase: ts.src.ResourceBase}
		if err := n.Init(ctx, "default", ts.src.Store("default")); err != nil {
			t.Fatal(err)
		}
	}
	ts := startSource(t, dir, nil, nil)
	beforeFirstUpdate = nil
	return ts, pub, func() { n.Notify(ctx, "default", ts.src.Store("default")) }
}

// TestNotifiedFilesRecorded: a file that arrives by notification is
// recorded in the state, whatever the durability mode, so that a later
// deletion at the Source removes it (issue 9, item 1).
func TestNotifiedFilesRecorded(t *testing.T) {
	for _, fsyncEach := range []bool{false, true} {
		t.Run(map[bool]string{false: "batched", true: "fsync"}[fsyncEach], func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "a.txt", []byte("a"))
			ts, pub, notifyNow := notifiedSource(t, dir)
			dest := t.TempDir()
			opt := syncOpts(t, dest)
			opt.FsyncEach = fsyncEach
			ctx := context.Background()
			m, err := destination.Open(ctx, ts.base, opt)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, "p.txt", []byte("pushed"))
			ts.update(t)
			notifyNow()
			h, es := parse(t, pub.payloads[len(pub.payloads)-1])
			sr, err := m.Apply(ctx, "default", h, es)
			if err != nil || sr.Fetched != 1 {
				t.Fatalf("apply: %+v %v", sr, err)
			}
			m.Close()

			// a.txt came by the baseline, p.txt by the notification.
			os.Remove(filepath.Join(dir, "p.txt"))
			os.Remove(filepath.Join(dir, "a.txt"))
			ts.update(t)
			sr = one(t, mustSync(t, ts.base, opt))
			if sr.Deleted != 2 || sr.Kept != 0 || sr.Failed != 0 {
				t.Fatalf("deletion of a notified file: %+v", sr)
			}
			for _, n := range []string{"a.txt", "p.txt"} {
				if _, err := os.Stat(filepath.Join(dest, n)); !os.IsNotExist(err) {
					t.Fatalf("%s still here: %v", n, err)
				}
			}
			sameTree(t, dir, dest)
		})
	}
}
