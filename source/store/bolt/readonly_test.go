package bolt_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
)

// A read-only open reads what the writer committed, writes nothing, admits
// other read-only opens, and excludes the writer until closed.
func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := bolt.OpenSet(dir, "nope", &bolt.Options{ReadOnly: true}); err == nil {
		t.Fatal("read-only open of a missing state succeeded")
	}
	w, err := bolt.OpenSet(dir, "s", nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, _, err := w.Apply(ctx, store.Batch{Changes: []store.Change{{Kind: rs.Created, Time: now, Resource: store.Resource{Path: "a", Size: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bolt.OpenSet(dir, "s", &bolt.Options{ReadOnly: true, LockTimeout: 50 * time.Millisecond}); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("read-only open beside the writer: %v, want ErrLocked", err)
	}
	w.Close()
	r1, err := bolt.OpenSet(dir, "s", &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, err := bolt.OpenSet(dir, "s", &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("second read-only open: %v", err)
	}
	defer r2.Close()
	if r, err := r2.Get(ctx, "a"); err != nil || r.Size != 1 || !r.Changed.Equal(now) {
		t.Fatalf("Get: %+v %v", r, err)
	}
	if _, _, err := r1.Apply(ctx, store.Batch{Changes: []store.Change{{Kind: rs.Created, Time: now, Resource: store.Resource{Path: "b"}}}}); err == nil {
		t.Fatal("Apply on a read-only open succeeded")
	}
	if _, err := bolt.OpenSet(dir, "s", &bolt.Options{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("writer beside readers: %v, want ErrLocked", err)
	}
}
