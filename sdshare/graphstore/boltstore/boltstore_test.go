package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/graphstoretest"
)

func TestContract(t *testing.T) {
	for _, batch := range []int{0, 500} {
		t.Run(map[int]string{0: "default batch", 500: "batch of 500"}[batch], func(t *testing.T) {
			graphstoretest.Run(t, func(t *testing.T) graphstore.Store {
				s, err := boltstore.Open(filepath.Join(t.TempDir(), "graph.db"), &boltstore.Options{NoSync: true, BatchSize: batch})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					s.Close()
				})
				return s
			})
		})
	}
}
