package source

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store/memstore"
)

// TestReplicaEmptyMount: a replica whose shared directory is not mounted
// (an empty mount point) takes the scanner role when the leader stops. It
// must not journal the deletion of every resource (which every
// Destination would then apply): a scan of an empty root against a
// non-empty inventory fails instead, changing nothing.
func TestReplicaEmptyMount(t *testing.T) {
	dir := t.TempDir()
	for i := range 5 {
		write(t, dir, filepath.Join("d", string(rune('a'+i))), "v1")
	}
	db := memstore.New()
	open := memOpener(db)
	a := startReplica(t, open, dir, t.TempDir())
	for deadline := time.Now().Add(10 * time.Second); !a.leads(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first replica does not lead")
		}
	}
	unmounted := t.TempDir()
	b := startReplica(t, open, unmounted, t.TempDir())
	a.stop()
	for deadline := time.Now().Add(10 * time.Second); !b.leads(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second replica does not take over")
		}
	}
	time.Sleep(500 * time.Millisecond) // several rescans
	st := db.Open("default")
	defer st.Close()
	for c, err := range st.Journal(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		if c.Kind == rs.Deleted {
			t.Fatalf("journal: %s deleted: an empty mount point emptied the collection", c.Path())
		}
	}
}
