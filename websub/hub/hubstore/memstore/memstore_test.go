package memstore_test

import (
	"testing"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/hubstoretest"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/memstore"
)

func TestContract(t *testing.T) {
	hubstoretest.Run(t, func(t *testing.T) hubstore.Store {
		s := memstore.Open()
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestCluster(t *testing.T) {
	hubstoretest.RunCluster(t, func(t *testing.T) (a, b hubstore.Store) {
		db := memstore.New(nil)
		a, b = db.Open(), db.Open()
		t.Cleanup(func() { a.Close(); b.Close() })
		return a, b
	})
}
