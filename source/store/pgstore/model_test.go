package pgstore_test

import (
	"context"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/pgstore"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

// TestModelReopen: the model-based test, closing the pool and opening the
// same database and set again at random steps.
func TestModelReopen(t *testing.T) {
	pgtest.Skip(t)
	u := pgtest.Database(t)
	open := func(t *testing.T) store.Store {
		s, err := pgstore.Open(context.Background(), u, "m", nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	storetest.RunModel(t, open, func(t *testing.T, s store.Store) store.Store {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return open(t)
	})
}
