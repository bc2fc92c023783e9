package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

// TestModelReopen: the model-based test, closing and reopening the state
// file at random steps.
func TestModelReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	open := func(t *testing.T) store.Store {
		db, err := bolt.Open(path, &bolt.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	storetest.RunModel(t, open, func(t *testing.T, s store.Store) store.Store {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return open(t)
	})
}
