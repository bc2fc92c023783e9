package scan_test

import (
	"context"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/storage/mem"
)

// TestContentFutureMtime: an object whose modification time is in the
// future (a writer's clock ahead, or an "mtime" kept by rclone from a
// file with a bad timestamp) is read once, like any other, when its
// Version comes from its bytes (an ETag; the in-memory twin's MD5): the
// racily-clean rule is for Versions made of an mtime. Otherwise every
// rescan downloads it again.
func TestContentFutureMtime(t *testing.T) {
	ctx := context.Background()
	ms, c := memContent(t)
	db := openDB(t, t.TempDir()+"/state.db")
	sc, err := scan.New(scan.Options{Content: c, Store: db})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ms.PutObject("future", mem.Object{Data: []byte("x"), ModTime: time.Now().Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	putOld(t, ms, "old", "y")
	if _, err := sc.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	opens := ms.Opens()
	st, err := sc.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Hashed != 0 || st.Unchanged != 2 || ms.Opens() != opens {
		t.Errorf("rescan of unchanged objects: hashed %d, unchanged %d, %d objects opened", st.Hashed, st.Unchanged, ms.Opens()-opens)
	}
}
