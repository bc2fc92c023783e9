package memstore_test

import (
	"testing"

	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/memstore"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

// TestModelReopen: the model-based test with reopens (a new handle on the
// same DB keeps the set's state).
func TestModelReopen(t *testing.T) {
	db := memstore.New()
	storetest.RunModel(t, func(t *testing.T) store.Store { return db.Open("set") },
		func(t *testing.T, s store.Store) store.Store {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return db.Open("set")
		})
}
