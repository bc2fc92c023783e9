package destination_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// TestFeedPageOffOrigin: a page of the feed at another origin (its last,
// or a prev) is not read: it could delete the origin's objects.
func TestFeedPageOffOrigin(t *testing.T) {
	fs := startFeed(t, 10)
	evil := startFeed(t, 10)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	fs.do(activity.Create, "/a", "a", t0)
	dest := t.TempDir()
	if _, err := feedSync(t, fs.collection(), dest, nil); err != nil {
		t.Fatal(err)
	}
	// The evil page deletes /a of the origin.
	evil.mu.Lock()
	evil.items = append(evil.items, map[string]any{"type": "Delete", "endTime": t0.Add(time.Minute).Format(time.RFC3339),
		"object": map[string]any{"id": fs.base + "/a"}})
	evil.mu.Unlock()
	fs.do(activity.Create, "/b", "b", t0.Add(time.Second))
	fs.pageHook = func(n int, p map[string]any) {
		p["prev"] = map[string]any{"id": evil.base + "/activity/page-0"}
	}
	_, err := feedSync(t, fs.collection(), dest, nil)
	if _, ok := destFiles(t, dest)["/a"]; !ok {
		t.Errorf("a page at another origin deleted /a (err %v)", err)
	}
	if !errors.Is(err, destination.ErrFeed) || !strings.Contains(err.Error(), evil.base) {
		t.Errorf("err = %v, want ErrFeed naming the page elsewhere", err)
	}
}

// TestFeedRedirectOffOrigin: a collection that redirects to another
// origin cannot have that origin's feed delete the mirror's objects.
func TestFeedRedirectOffOrigin(t *testing.T) {
	fs := startFeed(t, 10)
	evil := startFeed(t, 10)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	fs.do(activity.Create, "/a", "a", t0)
	dest := t.TempDir()
	if _, err := feedSync(t, fs.collection(), dest, nil); err != nil {
		t.Fatal(err)
	}
	evil.mu.Lock()
	evil.items = append(evil.items, map[string]any{"type": "Delete", "endTime": t0.Add(time.Minute).Format(time.RFC3339),
		"object": map[string]any{"id": fs.base + "/a"}})
	evil.mu.Unlock()
	fs.mu.Lock()
	fs.redirect = evil.collection()
	fs.mu.Unlock()
	_, err := feedSync(t, fs.collection(), dest, nil)
	if _, ok := destFiles(t, dest)["/a"]; !ok {
		t.Errorf("a feed at another origin, reached by a redirect, deleted /a (err %v)", err)
	}
}
