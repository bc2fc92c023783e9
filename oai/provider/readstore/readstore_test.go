package readstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
)

// TestOpenReadWrite: an absent state is ErrNoState (never created); a
// present one is read; writes fail with ErrReadOnly.
func TestOpenReadWrite(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir, "default"); !errors.Is(err, ErrNoState) {
		t.Fatalf("Open of an absent state: %v, want ErrNoState", err)
	}
	db, err := bolt.OpenSet(dir, "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PutMeta(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	db.Close()
	st, err := Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if v, err := st.GetMeta(t.Context(), "k"); err != nil || string(v) != "v" {
		t.Errorf("GetMeta = %q, %v", v, err)
	}
	if err := st.PutMeta(t.Context(), "k", []byte("w")); !errors.Is(err, ErrReadOnly) {
		t.Errorf("PutMeta: %v, want ErrReadOnly", err)
	}
	if _, _, err := st.Apply(t.Context(), store.Batch{}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Apply: %v, want ErrReadOnly", err)
	}
}

// TestWriterNotStarved: readers whose requests overlap without a gap
// still let a writer's exclusive open through within a second (the
// writer polls bbolt's lock as publish does).
func TestWriterNotStarved(t *testing.T) {
	dir := t.TempDir()
	db, err := bolt.OpenSet(dir, "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	st, err := Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				for _, err := range st.Resources(ctx) {
					if err != nil && ctx.Err() == nil {
						t.Error(err)
					}
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	for range 3 {
		t0 := time.Now()
		w, err := bolt.OpenSet(dir, "default", &bolt.Options{LockTimeout: 2 * time.Second})
		if err != nil {
			t.Errorf("writer beside 8 readers: %v", err)
			continue
		}
		if d := time.Since(t0); d > time.Second {
			t.Errorf("writer waited %v", d)
		}
		w.Close()
	}
	cancel()
	wg.Wait()
}
