package memstore_test

import (
	"testing"

	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/graphstoretest"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
)

func TestContract(t *testing.T) {
	graphstoretest.Run(t, func(t *testing.T) graphstore.Store { return memstore.New() })
}
