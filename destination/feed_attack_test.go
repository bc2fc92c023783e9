package destination_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/feed/activity"
)

// TestFeedDeletesBounded: a feed's deletions obey --max-delete as a
// Change List's do, and never remove a file the mirror did not write.
func TestFeedDeletesBounded(t *testing.T) {
	fs := startFeed(t, 10)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range 10 {
		fs.do(activity.Create, "/o"+strconv.Itoa(i), "x", t0.Add(time.Duration(i)*time.Second))
	}
	dest := t.TempDir()
	// A file of the user's at a path the feed will later delete.
	if err := os.WriteFile(filepath.Join(dest, "mine"), []byte("user"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := feedSync(t, fs.collection(), dest, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		fs.do(activity.Delete, "/o"+strconv.Itoa(i), "", t0.Add(time.Duration(20+i)*time.Second))
	}
	fs.do(activity.Delete, "/mine", "", t0.Add(40*time.Second))
	lim, _ := destination.ParseDeleteLimit("2")
	rep, _ := feedSync(t, fs.collection(), dest, func(o *destination.Options) { o.MaxDelete = lim })
	if n := len(destFiles(t, dest)); n != 11 {
		t.Errorf("with --max-delete 2, %d files left, want all 11 (%+v)", n, rep.Sets[0])
	}
	if _, err := feedSync(t, fs.collection(), dest, nil); err != nil {
		t.Fatal(err)
	}
	got := destFiles(t, dest)
	if got["/mine"] != "user" {
		t.Error("the feed's Delete removed a file the mirror did not write")
	}
	if len(got) != 3 {
		t.Errorf("after the deletions: %v", got)
	}
}
