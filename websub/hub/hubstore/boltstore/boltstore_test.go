package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/boltstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/hubstoretest"
)

func TestContract(t *testing.T) {
	hubstoretest.Run(t, func(t *testing.T) hubstore.Store {
		s, err := boltstore.Open(filepath.Join(t.TempDir(), "hub.db"), &boltstore.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestDurable(t *testing.T) {
	hubstoretest.RunDurable(t, func(t *testing.T) func() hubstore.Store {
		path := filepath.Join(t.TempDir(), "hub.db")
		return func() hubstore.Store {
			s, err := boltstore.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}
